// --kv-events-config: vLLM's KVEventsConfig keys and defaults, and a start-up error naming the key
// for anything else.

import { parseKvEventsConfig, publishesKvEvents } from '../../../../src/engine/kv-events/kv-events-config';
import { runCli } from '../../../helpers/run-cli';

describe('--kv-events-config', () => {
  it("takes vLLM's defaults, and the zmq publisher once events are enabled", () => {
    expect(parseKvEventsConfig('{"enable_kv_cache_events": true}')).toEqual({
      enableKvCacheEvents: true,
      publisher: 'zmq',
      endpoint: 'tcp://*:5557',
      replayEndpoint: null,
      bufferSteps: 10000,
      hwm: 100000,
      maxQueueSize: 100000,
      topic: '',
    });
    expect(parseKvEventsConfig('{}').publisher).toBe('null');
    expect(publishesKvEvents(parseKvEventsConfig('{}'))).toBe(false);
    expect(publishesKvEvents(parseKvEventsConfig('{"enable_kv_cache_events": true, "publisher": "null"}'))).toBe(false);
  });

  it('reads every key', () => {
    const config = parseKvEventsConfig(
      '{"enable_kv_cache_events": true, "publisher": "zmq", "endpoint": "tcp://10.0.0.1:6000", "replay_endpoint": "tcp://*:6001", "buffer_steps": 5, "hwm": 0, "max_queue_size": 7, "topic": "kv@pod@model"}',
    );
    expect(config).toEqual({
      enableKvCacheEvents: true,
      publisher: 'zmq',
      endpoint: 'tcp://10.0.0.1:6000',
      replayEndpoint: 'tcp://*:6001',
      bufferSteps: 5,
      hwm: 0,
      maxQueueSize: 7,
      topic: 'kv@pod@model',
    });
    expect(publishesKvEvents(config)).toBe(true);
  });

  it.each([
    ['{"enable_kv_cache_events": true, "bogus": 1}', 'unknown key "bogus"'],
    ['{"enable_kv_cache_events": "yes"}', 'enable_kv_cache_events must be true or false'],
    ['{"publisher": "kafka"}', 'publisher must be one of "null", "zmq", got "kafka"'],
    ['{"endpoint": ""}', 'endpoint must not be empty'],
    ['{"replay_endpoint": 5558}', 'replay_endpoint must be a string'],
    ['{"buffer_steps": -1}', 'buffer_steps must be an integer >= 0'],
    ['{"hwm": 1.5}', 'hwm must be an integer >= 0'],
    ['{"max_queue_size": "10"}', 'max_queue_size must be an integer >= 0'],
    ['{"topic": null}', 'topic must be a string'],
    ['[1]', 'must be a JSON object'],
    ['{nope', 'must be a JSON object'],
  ])('refuses %s', (json, message) => {
    expect(() => parseKvEventsConfig(json)).toThrow(message);
  });

  it('is an ortllm serve flag (dotted keys too) whose error names the flag and key', async () => {
    const ok = await runCli(['serve', '/models/m.gguf', '--kv-events-config', '{"enable_kv_cache_events": true, "topic": "kv"}']);
    expect(ok.code).toBe(0);
    expect(ok.config!.kvEventsConfig).toMatchObject({ enableKvCacheEvents: true, publisher: 'zmq', topic: 'kv' });
    const dotted = await runCli(['serve', '/models/m.gguf', '--kv-events-config.enable_kv_cache_events', 'true', '--kv-events-config.buffer_steps', '3']);
    expect(dotted.code).toBe(0);
    expect(dotted.config!.kvEventsConfig).toMatchObject({ enableKvCacheEvents: true, bufferSteps: 3 });
    const bad = await runCli(['serve', '/models/m.gguf', '--kv-events-config', '{"buffer_size": 3}']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('--kv-events-config: unknown key "buffer_size"');
  });
});
