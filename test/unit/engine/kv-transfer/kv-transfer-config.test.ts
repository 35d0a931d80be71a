// --kv-transfer-config and kv_transfer_params: what is honoured, and the error naming each key that is not.

import { parseKvTransferConfig } from '../../../../src/engine/kv-transfer/kv-transfer-config';
import { parseKvTransferParams } from '../../../../src/engine/kv-transfer/kv-transfer-params';
import { knownKvConnectors } from '../../../../src/engine/kv-transfer/connectors';

const parse = (json: object, env: Record<string, string> = {}) => parseKvTransferConfig(JSON.stringify(json), knownKvConnectors(), env);

describe('parseKvTransferConfig', () => {
  it('takes vLLM keys, the NIXL side-channel defaults and their environment variables', () => {
    const config = parse({ kv_connector: 'TcpConnector', kv_role: 'kv_both' });
    expect(config).toMatchObject({ connector: 'TcpConnector', role: 'kv_both', host: null, port: 5600, abortRequestTimeoutS: 480 });
    expect(config.engineId).toMatch(/^[0-9a-f-]{36}$/);
    const env = { VLLM_NIXL_SIDE_CHANNEL_HOST: '10.0.0.5', VLLM_NIXL_SIDE_CHANNEL_PORT: '6000', VLLM_NIXL_ABORT_REQUEST_TIMEOUT: '12' };
    expect(parse({ kv_connector: 'TcpConnector', kv_role: 'kv_producer', engine_id: 'p0' }, env)).toMatchObject({ engineId: 'p0', host: '10.0.0.5', port: 6000, abortRequestTimeoutS: 12 });
    expect(parse({ kv_connector: 'TcpConnector', kv_role: 'kv_consumer', kv_ip: '10.0.0.9', kv_port: 0, kv_connector_extra_config: { abort_request_timeout: 3, transfer_timeout: 4 } }, env)).toMatchObject({
      host: '10.0.0.9',
      port: 0,
      abortRequestTimeoutS: 3,
      transferTimeoutS: 4,
    });
  });

  it('names the key it refuses', () => {
    expect(() => parse({ kv_connector: 'NixlConnector', kv_role: 'kv_both' })).toThrow("kv_connector 'NixlConnector' is not a known connector; known connectors: TcpConnector");
    expect(() => parse({ kv_connector: 'TcpConnector' })).toThrow('kv_role must be one of kv_producer, kv_consumer, kv_both');
    expect(() => parse({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_buffer_size: 1e9 })).toThrow('kv_buffer_size is not supported');
    expect(() => parse({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_rank: 0 })).toThrow('kv_rank is not supported');
    expect(() => parse({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_buffer_device: 'cuda' })).toThrow("kv_buffer_device must be 'cpu'");
    expect(() => parse({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_port: 70000 })).toThrow('kv_port must be a port number');
    expect(() => parse({ kv_connector: 'TcpConnector', kv_role: 'kv_both', kv_connector_extra_config: { backends: ['UCX'] } })).toThrow('kv_connector_extra_config.backends is not a TcpConnector setting');
    expect(() => parse({ kv_connector: 'TcpConnector', kv_role: 'kv_both', colour: 1 })).toThrow('colour is not a KVTransferConfig key');
    expect(() => parseKvTransferConfig('{', ['TcpConnector'])).toThrow('--kv-transfer-config must be a JSON object');
  });
});

describe('parseKvTransferParams', () => {
  const remote = { do_remote_prefill: true, remote_engine_id: 'e', remote_request_id: 'r', remote_host: 'h', remote_port: 5600, remote_block_ids: [1, 2] };

  it('reads the prefill request, the decode request and vLLM nesting of block ids', () => {
    expect(parseKvTransferParams({ do_remote_decode: true, do_remote_prefill: false, remote_engine_id: null })).toEqual({ kind: 'send' });
    expect(parseKvTransferParams({})).toBeNull();
    expect(parseKvTransferParams({ ...remote, remote_block_ids: [[1, 2]] })).toEqual({ kind: 'receive', source: { engineId: 'e', requestId: 'r', host: 'h', port: 5600, blockIds: [1, 2] } });
  });

  it('refuses malformed params with a 400 naming the field', () => {
    expect(() => parseKvTransferParams({ ...remote, do_remote_decode: true })).toThrow('cannot both be true');
    expect(() => parseKvTransferParams({ ...remote, remote_port: 'x' })).toThrow('remote_port must be a port number');
    expect(() => parseKvTransferParams({ ...remote, remote_host: undefined })).toThrow('remote_host must be a non-empty string');
    expect(() => parseKvTransferParams({ ...remote, remote_block_ids: [-1] })).toThrow('remote_block_ids must be a list');
    expect(() => parseKvTransferParams({ do_remote_decode: 'yes' })).toThrow('do_remote_decode must be a boolean');
  });
});
