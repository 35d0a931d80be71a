// --kv-transfer-config (vLLM's KVTransferConfig keys): which connector moves KV blocks between
// replicas, this replica's role, its engine id and the address its connector listens on. Keys
// that mean nothing for a connector over host memory and TCP are refused by name, not ignored.

import { randomUUID } from 'node:crypto';

export type KvRole = 'kv_producer' | 'kv_consumer' | 'kv_both';
const ROLES: readonly KvRole[] = ['kv_producer', 'kv_consumer', 'kv_both'];

export interface KvTransferConfig {
  /** The registered connector's name (connectors.ts). */
  connector: string;
  role: KvRole;
  /** Names this replica in the kv_transfer_params it returns (vLLM: a random UUID unless given). */
  engineId: string;
  /** kv_ip, else VLLM_NIXL_SIDE_CHANNEL_HOST: the host the connector listens on and advertises (null: decided by the server's --host). */
  host: string | null;
  /** kv_port, else VLLM_NIXL_SIDE_CHANNEL_PORT, else 5600 (vLLM's side-channel default); 0 picks a free port. */
  port: number;
  /** Seconds a producer keeps a finished prefill's blocks for the decode side (VLLM_NIXL_ABORT_REQUEST_TIMEOUT, 480). */
  abortRequestTimeoutS: number;
  /** Seconds a consumer waits for one pull before it prefills locally instead. */
  transferTimeoutS: number;
}

/** vLLM's NIXL side-channel port. */
export const DEFAULT_SIDE_CHANNEL_PORT = 5600;
/** vLLM's VLLM_NIXL_ABORT_REQUEST_TIMEOUT default. */
export const DEFAULT_ABORT_REQUEST_TIMEOUT_S = 480;
const DEFAULT_TRANSFER_TIMEOUT_S = 30;

const EXTRA_KEYS = new Set(['abort_request_timeout', 'transfer_timeout']);

/** Why a vLLM key is refused (each applies to a connector this server does not have). */
const REFUSED_KEYS: Record<string, string> = {
  kv_rank: 'ranks belong to P2pNcclConnector; TcpConnector pairs replicas through kv_transfer_params',
  kv_buffer_size: 'TcpConnector sends from and into the KV cache itself and keeps no transfer buffer',
  kv_connector_module_path: 'connectors cannot be loaded from Python modules; the registered ones are built in',
  enable_permute_local_kv: 'KV layouts are checked to be equal at each transfer and never permuted',
};

type Env = Record<string, string | undefined>;

/** vLLM's NIXL variables the connector reads (only with --kv-transfer-config). */
export const KV_TRANSFER_ENV_VARS: readonly string[] = ['VLLM_NIXL_SIDE_CHANNEL_HOST', 'VLLM_NIXL_SIDE_CHANNEL_PORT', 'VLLM_NIXL_ABORT_REQUEST_TIMEOUT'];

/** Parses and checks the flag's JSON; throws an Error whose message names the key at fault. */
export function parseKvTransferConfig(text: string, knownConnectors: readonly string[], env: Env = process.env): KvTransferConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`--kv-transfer-config must be a JSON object: ${(err as Error).message}`);
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('--kv-transfer-config must be a JSON object');
  return normalizeKvTransferConfig(raw as Record<string, unknown>, knownConnectors, env);
}

export function normalizeKvTransferConfig(raw: Record<string, unknown>, knownConnectors: readonly string[], env: Env = process.env): KvTransferConfig {
  const bad = (key: string, why: string): never => {
    throw new Error(`--kv-transfer-config: ${key} ${why}`);
  };
  for (const [key, value] of Object.entries(raw)) {
    if (key in REFUSED_KEYS && value !== null && value !== undefined) bad(key, `is not supported: ${REFUSED_KEYS[key]}`);
  }
  const known = new Set(['kv_connector', 'kv_role', 'engine_id', 'kv_ip', 'kv_port', 'kv_parallel_size', 'kv_buffer_device', 'kv_connector_extra_config', 'kv_load_failure_policy', ...Object.keys(REFUSED_KEYS)]);
  for (const key of Object.keys(raw)) if (!known.has(key)) bad(key, 'is not a KVTransferConfig key');

  const connector = raw.kv_connector;
  if (typeof connector !== 'string' || connector === '') bad('kv_connector', `is required; known connectors: ${knownConnectors.join(', ')}`);
  if (!knownConnectors.includes(connector as string)) bad('kv_connector', `'${String(connector)}' is not a known connector; known connectors: ${knownConnectors.join(', ')}`);
  const role = raw.kv_role;
  if (!ROLES.includes(role as KvRole)) bad('kv_role', `must be one of ${ROLES.join(', ')} when kv_connector is set`);
  if (raw.engine_id !== undefined && raw.engine_id !== null && (typeof raw.engine_id !== 'string' || raw.engine_id === '')) bad('engine_id', 'must be a non-empty string');
  if (raw.kv_parallel_size !== undefined && raw.kv_parallel_size !== null && raw.kv_parallel_size !== 1) bad('kv_parallel_size', 'must be 1 (one engine per replica)');
  if (raw.kv_buffer_device !== undefined && raw.kv_buffer_device !== null && raw.kv_buffer_device !== 'cpu') bad('kv_buffer_device', "must be 'cpu': the KV cache is in host memory");
  if (raw.kv_load_failure_policy !== undefined && raw.kv_load_failure_policy !== null && raw.kv_load_failure_policy !== 'recompute') {
    bad('kv_load_failure_policy', "must be 'recompute': a failed transfer always falls back to a local prefill");
  }
  const host = raw.kv_ip ?? env.VLLM_NIXL_SIDE_CHANNEL_HOST ?? null;
  if (host !== null && (typeof host !== 'string' || host === '')) bad('kv_ip', 'must be a host name or address');
  const port = raw.kv_port ?? (env.VLLM_NIXL_SIDE_CHANNEL_PORT !== undefined ? Number(env.VLLM_NIXL_SIDE_CHANNEL_PORT) : DEFAULT_SIDE_CHANNEL_PORT);
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 0 || port > 65535) bad('kv_port', 'must be a port number 0..65535 (0 picks a free one)');

  const extra = raw.kv_connector_extra_config ?? {};
  if (typeof extra !== 'object' || extra === null || Array.isArray(extra)) bad('kv_connector_extra_config', 'must be a JSON object');
  const extraMap = extra as Record<string, unknown>;
  for (const key of Object.keys(extraMap)) if (!EXTRA_KEYS.has(key)) bad(`kv_connector_extra_config.${key}`, `is not a TcpConnector setting (known: ${[...EXTRA_KEYS].join(', ')})`);
  const envTimeout = env.VLLM_NIXL_ABORT_REQUEST_TIMEOUT !== undefined ? Number(env.VLLM_NIXL_ABORT_REQUEST_TIMEOUT) : DEFAULT_ABORT_REQUEST_TIMEOUT_S;
  const abortRequestTimeoutS = positiveSeconds(extraMap.abort_request_timeout ?? envTimeout, 'kv_connector_extra_config.abort_request_timeout (or VLLM_NIXL_ABORT_REQUEST_TIMEOUT)', bad);
  const transferTimeoutS = positiveSeconds(extraMap.transfer_timeout ?? DEFAULT_TRANSFER_TIMEOUT_S, 'kv_connector_extra_config.transfer_timeout', bad);
  return {
    connector: connector as string,
    role: role as KvRole,
    engineId: (raw.engine_id as string | undefined) ?? randomUUID(),
    host: host as string | null,
    port: port as number,
    abortRequestTimeoutS,
    transferTimeoutS,
  };
}

function positiveSeconds(value: unknown, key: string, bad: (key: string, why: string) => never): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) bad(key, 'must be a positive number of seconds');
  return value;
}

export function isProducer(config: KvTransferConfig): boolean {
  return config.role !== 'kv_consumer';
}

export function isConsumer(config: KvTransferConfig): boolean {
  return config.role !== 'kv_producer';
}
