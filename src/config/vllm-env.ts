// vLLM's environment variables that mean something here: the `env` bindings of flags.ts. Flags
// win over the environment (resolveServerConfig applies these first). Any other VLLM_* variable
// that is set gets one startup line saying it has no effect.

import { KV_TRANSFER_ENV_VARS } from '../engine/kv-transfer/kv-transfer-config';
import type { EnvBinding, GivenFlags } from './flag-declaration';
import { FLAGS } from './flags';
import type { ServerConfig } from './server-config';

export interface VllmEnvVar extends EnvBinding<unknown> {
  /** The config field it sets. */
  key: keyof typeof FLAGS;
}

export const VLLM_ENV_VARS: readonly VllmEnvVar[] = Object.entries(FLAGS).flatMap(([key, declaration]) => {
  const env = (declaration as { env?: EnvBinding<unknown> }).env;
  return env ? [{ ...env, key: key as keyof typeof FLAGS }] : [];
});

/** The config fields the environment sets; throws (ConfigError upstream) on a malformed value. */
export function fromVllmEnv(env: NodeJS.ProcessEnv, flags: GivenFlags): Partial<ServerConfig> {
  const out: Record<string, unknown> = {};
  for (const variable of VLLM_ENV_VARS) {
    const value = env[variable.name];
    if (value === undefined || value === '') continue;
    const read = variable.read(value, flags);
    if (read !== undefined) out[variable.key] = read;
  }
  return out;
}

/** VLLM_* variables that are set but mean nothing here (one startup line names them); with --kv-transfer-config the connector's are read. */
export function unusedVllmEnv(env: NodeJS.ProcessEnv, kvTransfer = false): string[] {
  const known = new Set([...VLLM_ENV_VARS.map((v) => v.name), ...(kvTransfer ? KV_TRANSFER_ENV_VARS : [])]);
  return Object.keys(env)
    .filter((name) => name.startsWith('VLLM_') && !known.has(name))
    .sort();
}
