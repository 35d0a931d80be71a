// The `ortllm serve` flags on a commander command, and reading them back into a ServerConfig
// plus the startup notices: implemented flags come from SERVER_FLAGS, every other vLLM serve
// flag from VLLM_FLAG_POLICY (accepted with a notice, or refused with the reason).
// `run-batch` takes the same flags.

import { Command, InvalidArgumentError, Option } from 'commander';
import { readFileSync } from 'node:fs';
import { cpuBindNotice } from '../config/env-values';
import { ConfigError, resolveServerConfig, ServerConfig } from '../config/server-config';
import { FlagSpec, SERVER_FLAGS } from '../config/server-flags';
import { unusedVllmEnv } from '../config/vllm-env';
import { VLLM_FLAG_POLICY, VllmFlagPolicy } from '../config/vllm-flag-policy';
import type { ArgvRules } from './vllm-argv';

function toOption(spec: FlagSpec): Option {
  const description = spec.defaultText ? `${spec.description} (default: ${spec.defaultText})` : spec.description;
  const option = new Option(spec.flags, description);
  if (spec.choices) option.choices(spec.choices);
  const parse = spec.parse;
  if (parse) {
    option.argParser((text: string, previous: unknown) => {
      try {
        return parse(text, previous);
      } catch (err) {
        throw new InvalidArgumentError((err as Error).message);
      }
    });
  }
  return option;
}

const isSwitch = (flags: string): boolean => !/[<[]/.test(flags);
const longName = (flags: string): string => flags.split(/[ ,]/)[0];

/** The policy flags as hidden options (a switch also gets vLLM's --no- form). */
function policyOptions(policy: VllmFlagPolicy): Option[] {
  const options = [new Option(policy.flags).hideHelp()];
  if (isSwitch(policy.flags)) options.push(new Option(`--no-${longName(policy.flags).slice(2)}`).hideHelp());
  return options;
}

export function addServeOptions(command: Command): Command {
  for (const spec of SERVER_FLAGS) command.addOption(toOption(spec));
  for (const policy of VLLM_FLAG_POLICY) for (const option of policyOptions(policy)) command.addOption(option);
  command.addOption(new Option('--config <file>', 'Read flags from a YAML file (vLLM keys, either spelling); command-line flags win'));
  return command;
}

/** Aliases and flag names for normalizeVllmArgv. */
export function serveArgvRules(): ArgvRules {
  const aliases = new Map<string, string>();
  for (const policy of VLLM_FLAG_POLICY) for (const alias of policy.aliases ?? []) aliases.set(alias, longName(policy.flags));
  const knownFlags = new Set<string>();
  for (const spec of SERVER_FLAGS) knownFlags.add(longName(spec.flags));
  for (const policy of VLLM_FLAG_POLICY) for (const option of policyOptions(policy)) knownFlags.add(longName(option.flags));
  return { aliases, knownFlags };
}

export interface ServeInput {
  config: ServerConfig;
  /** One line each: flags and VLLM_* variables accepted without effect. */
  notices: string[];
}

/** Reads the parsed options into a validated config; refused flags throw ConfigError. */
export function readServeOptions(command: Command, modelArg: string | undefined, env: NodeJS.ProcessEnv = process.env): ServeInput {
  const values: Record<string, unknown> = command.opts();
  const input: Partial<Record<keyof ServerConfig, unknown>> = {};
  for (const spec of SERVER_FLAGS) {
    const attribute = new Option(spec.flags).attributeName();
    const value = values[attribute];
    if (value === undefined) continue;
    // Two spellings of one setting (--log-level / --uvicorn-log-level): the last given wins.
    if (command.getOptionValueSource(attribute) === 'cli' || input[spec.key] === undefined) input[spec.key] = spec.negates ? !value : value;
  }
  if (modelArg !== undefined) {
    if (input.model !== undefined && input.model !== modelArg) {
      throw new ConfigError(`MODEL argument '${modelArg}' and --model '${input.model as string}' differ; give one`);
    }
    input.model = modelArg;
  }
  const notices = applyFlagPolicies(values);
  const unused = unusedVllmEnv(env, input.kvTransferConfig != null);
  if (unused.length > 0) notices.push(`${unused.join(', ')} ${unused.length === 1 ? 'is' : 'are'} set and ${unused.length === 1 ? 'has' : 'have'} no effect here`);
  const config = resolveServerConfig(input as Partial<ServerConfig>, env);
  const bind = cpuBindNotice(env.VLLM_CPU_OMP_THREADS_BIND, processCpus());
  if (bind) notices.push(bind);
  return { config, notices };
}

/** This process's CPUs as Linux lists them (/proc/self/status), or null where that cannot be read. */
function processCpus(): string | null {
  try {
    return /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1] ?? null;
  } catch {
    return null;
  }
}

/** Refusals throw; accepted flags come back as notices. */
function applyFlagPolicies(values: Record<string, unknown>): string[] {
  const notices: string[] = [];
  for (const policy of VLLM_FLAG_POLICY) {
    const flag = longName(policy.flags);
    const value = values[new Option(policy.flags).attributeName()];
    if (value === undefined) continue;
    const shown = value === true ? flag : value === false ? `--no-${flag.slice(2)}` : `${flag} ${Array.isArray(value) ? value.join(' ') : (value as string)}`;
    if (policy.status === 'refused' && !policy.harmless?.(value)) {
      throw new ConfigError(`${shown} is not supported: ${policy.why}. Instead: ${policy.instead}.`);
    }
    notices.push(`${shown} has no effect here: ${policy.why}`);
  }
  return notices;
}
