// A request's kv_transfer_params as the engine acts on them (vLLM NixlConnector's fields): a
// prefill whose KV a decode replica will pull (do_remote_decode), or a decode whose prompt KV is
// pulled from the prefill replica named in the params (do_remote_prefill).

import { RequestValidationError } from '../errors';

/** Where a decode request pulls its prompt's KV from. */
export interface RemotePrefillSource {
  engineId: string;
  requestId: string;
  host: string;
  port: number;
  /** The producer's block ids of the prompt, in order (informative: the pull names the transfer). */
  blockIds: number[];
}

export type KvTransferRole = { kind: 'send' } | { kind: 'receive'; source: RemotePrefillSource };

const PARAM = 'kv_transfer_params';

/** null: the params ask for no transfer (both flags false or absent). Throws a 400 for malformed ones. */
export function parseKvTransferParams(params: Record<string, unknown>): KvTransferRole | null {
  const flag = (key: string): boolean => {
    const v = params[key];
    if (v !== undefined && v !== null && typeof v !== 'boolean') throw new RequestValidationError(`kv_transfer_params.${key} must be a boolean`, PARAM);
    return v === true;
  };
  const decode = flag('do_remote_decode');
  const prefill = flag('do_remote_prefill');
  if (decode && prefill) throw new RequestValidationError('kv_transfer_params: do_remote_decode and do_remote_prefill cannot both be true', PARAM);
  if (decode) return { kind: 'send' };
  if (!prefill) return null;
  const text = (key: string): string => {
    const v = params[key];
    if (typeof v !== 'string' || v === '') throw new RequestValidationError(`kv_transfer_params.${key} must be a non-empty string with do_remote_prefill`, PARAM);
    return v;
  };
  const port = params.remote_port;
  if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535) {
    throw new RequestValidationError('kv_transfer_params.remote_port must be a port number with do_remote_prefill', PARAM);
  }
  return {
    kind: 'receive',
    source: { engineId: text('remote_engine_id'), requestId: text('remote_request_id'), host: text('remote_host'), port, blockIds: blockIdsOf(params.remote_block_ids) },
  };
}

/** A flat list of block ids, or vLLM's one-group nesting [[...]]. */
function blockIdsOf(value: unknown): number[] {
  const flat = Array.isArray(value) && value.length === 1 && Array.isArray(value[0]) ? (value[0] as unknown[]) : value;
  if (!Array.isArray(flat) || !flat.every((id) => typeof id === 'number' && Number.isInteger(id) && id >= 0)) {
    throw new RequestValidationError('kv_transfer_params.remote_block_ids must be a list of block ids with do_remote_prefill', PARAM);
  }
  return flat as number[];
}
