// The flag declarations (flags.ts) and what is derived from them: defaults, validation messages,
// VLLM_* variables, the per-area configs and the engine options built once per config.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { areaConfigs, toEngineOptions, toLoadModelOptions } from '../../../src/config/engine-args';
import { CONFIG_AREAS } from '../../../src/config/flag-declaration';
import { FLAGS } from '../../../src/config/flags';
import { ConfigError, resolveServerConfig, ServerConfig } from '../../../src/config/server-config';
import { SERVER_FLAGS } from '../../../src/config/server-flags';
import { VLLM_ENV_VARS } from '../../../src/config/vllm-env';

/** The messages captured before the declarations replaced validate(); one bad value each. */
const EXPECTED = JSON.parse(readFileSync(join(__dirname, 'fixtures/validation-messages.json'), 'utf8')) as {
  errors: Record<string, string>;
  envErrors: Record<string, string>;
};

const BAD_VALUES: Record<string, unknown> = {
  port: -1, maxModelLen: 0, maxNumSeqs: 0, maxNumBatchedTokens: 1.5, schedulingPolicy: 'x', loadFormat: 'x', device: 'x',
  logLevel: 'x', unknownRequestFields: 'x', blockSize: 2000, kvCacheMemoryBytes: 0, maxLogprobs: -2, structuredOutputsLimits: { a: 0 },
  servedModelNames: [''], apiKeys: [''], maxRequestBodyBytes: 0, shutdownTimeoutSeconds: -1, maxJsonDepth: 0, maxJsonArrayLength: 0,
  bodyReadTimeoutSeconds: -1, maxNumQueuedReqs: 0, streamStallTimeoutSeconds: -1, tokenizerPoolSize: -1, maxAudioClipFilesizeMb: 0,
  maxAudioDurationSeconds: 0, sslKeyfile: 'a', chatTemplateContentFormat: 'x', enableAutoToolChoice: true, dtype: 'x', seed: 1.5,
  gpuMemoryUtilization: 2, numGpuBlocksOverride: 0, maxNumPartialPrefills: 0, maxLongPartialPrefills: 3, longPrefillTokenThreshold: -1,
  logStatsIntervalSeconds: 0, sslCertReqs: 3, maxLogLen: -1, overrideGenerationConfig: [], runner: 'x', convert: 'x', responsesStore: 'x',
  responsesStoreTtlSeconds: -1, responsesStoreMaxBytes: 0, forwardedAllowIps: ['zz'], responsesStoreTimeoutSeconds: 0,
  responsesChainMaxDepth: 0, responsesChainMaxBytes: 0, maxLoras: 0, maxLoraRank: 24, loraDtype: 'x',
  loraModules: [{ name: 'a', path: '/a' }, { name: 'a', path: '/b' }], allowedLocalMediaPath: '/nonexistent-ortllm-media',
  allowedMediaDomains: [''], maxImageFilesizeMb: 0, maxImagePixels: 0, imageFetchTimeoutSeconds: 0,
};

function errorOf(input: Partial<ServerConfig>, env: NodeJS.ProcessEnv = {}): string {
  try {
    resolveServerConfig(input, env);
    return 'OK';
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
}

describe('flag declarations', () => {
  it('refuse each bad value with the same message as before', () => {
    for (const [key, value] of Object.entries(BAD_VALUES)) {
      expect([key, errorOf({ [key]: value })]).toEqual([key, EXPECTED.errors[key]]);
    }
    expect(errorOf({ maxModelLen: 10, longPrefillTokenThreshold: 20 })).toBe(EXPECTED.errors.longVsMax);
  });

  it('refuse each malformed VLLM_* value with the same message as before', () => {
    for (const { name } of VLLM_ENV_VARS) expect([name, errorOf({}, { [name]: 'zz' })]).toEqual([name, EXPECTED.envErrors[name]]);
    expect(Object.keys(EXPECTED.envErrors).sort()).toEqual(VLLM_ENV_VARS.map((v) => v.name).sort());
  });

  it('give a config with exactly the declared keys, each default passing its own check', () => {
    const config = resolveServerConfig({}, {});
    expect(Object.keys(config).sort()).toEqual(Object.keys(FLAGS).sort());
    for (const [key, declaration] of Object.entries(FLAGS) as [keyof ServerConfig, { valid?: (v: unknown) => boolean }][]) {
      expect([key, declaration.valid?.(config[key]) ?? true]).toEqual([key, true]);
    }
  });

  it('derive defaults that depend on the device and the model', () => {
    expect(resolveServerConfig({}, {}).maxNumSeqs).toBe(128);
    expect(resolveServerConfig({ device: 'cuda' }, {}).maxNumSeqs).toBe(256);
    expect(resolveServerConfig({ model: '/m/tiny.gguf' }, {}).servedModelNames).toEqual(['/m/tiny.gguf']);
    expect(resolveServerConfig({ model: '/m/tiny.gguf', servedModelNames: [] }, {}).servedModelNames).toEqual(['/m/tiny.gguf']);
  });

  it('list every spelling once, each naming a declared key', () => {
    const spellings = SERVER_FLAGS.map((s) => s.flags.split(' ')[0]);
    expect(new Set(spellings).size).toBe(spellings.length);
    for (const spec of SERVER_FLAGS) expect(Object.keys(FLAGS)).toContain(spec.key);
    // A spelling placed away from its siblings sits right after its anchor.
    const disable = spellings.indexOf('--disable-log-requests');
    expect(spellings[disable - 1]).toBe('--long-prefill-token-threshold');
  });
});

describe('per-area configs and engine options', () => {
  it('put every flag in exactly one area', () => {
    const config = resolveServerConfig({ blockSize: 32, maxNumSeqs: 7, device: 'cpu' }, {});
    const areas = areaConfigs(config);
    expect(Object.keys(areas).sort()).toEqual([...CONFIG_AREAS].sort());
    const keys = Object.values(areas).flatMap((area) => Object.keys(area));
    expect(keys.sort()).toEqual(Object.keys(FLAGS).sort());
    expect(areas.cache.blockSize).toBe(32);
    expect(areas.scheduler.maxNumSeqs).toBe(7);
    expect(areas.device.device).toBe('cpu');
  });

  it('build the load options once per config, shared by the route plan and the engine', () => {
    const config = resolveServerConfig({ ropeTheta: 10000, hfOverrides: { max_position_embeddings: 64 } }, {});
    expect(toLoadModelOptions(config)).toBe(toEngineOptions(config).load);
    expect(toEngineOptions(config)).toBe(toEngineOptions(config));
    expect(toLoadModelOptions(config).hfOverrides).toEqual({ rope_theta: 10000, max_position_embeddings: 64 });
    expect(toEngineOptions(resolveServerConfig({}, {}))).not.toBe(toEngineOptions(config));
  });
});
