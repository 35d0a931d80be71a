// ServerConfig: defaults, flag parsing (commander), validation, the mapping onto EngineOptions.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, type CliOutcome } from '../../helpers/run-cli';
import { flagTableMarkdown } from '../../../src/config/flag-table';
import { SERVER_FLAGS } from '../../../src/config/server-flags';
import { VLLM_ENV_VARS } from '../../../src/config/vllm-env';
import { VLLM_FLAG_POLICY } from '../../../src/config/vllm-flag-policy';
import { toEngineOptions } from '../../../src/config/engine-args';
import { ConfigError, defaultTokenizerPoolSize, resolveServerConfig } from '../../../src/config/server-config';
import { parseByteSize, parseHumanInt, parseStringList } from '../../../src/config/units';
import { DEFAULT_STRUCTURED_OUTPUTS_LIMITS } from '../../../src/engine/structured/grammar-limits';

/** Parses `ortllm serve <args>` and returns the config, or the exit code on a usage error. */
function parse(args: string[]): Promise<CliOutcome> {
  return runCli(['serve', ...args]);
}

describe('units', () => {
  it('reads human-readable token counts like vLLM (k = 1000, K = 1024)', () => {
    expect(parseHumanInt('4096')).toBe(4096);
    expect(parseHumanInt('32k')).toBe(32000);
    expect(parseHumanInt('32K')).toBe(32768);
    expect(() => parseHumanInt('lots')).toThrow(/not a number/);
  });

  it('reads byte sizes', () => {
    expect(parseByteSize('512MiB')).toBe(512 * 2 ** 20);
    expect(parseByteSize('2GiB')).toBe(2 * 2 ** 30);
    expect(parseByteSize('2G')).toBe(2 * 2 ** 30);
    expect(parseByteSize('1GB')).toBe(1e9);
    expect(parseByteSize('1048576')).toBe(1048576);
    expect(() => parseByteSize('12 parsecs')).toThrow(/not a size/);
  });

  it('reads JSON or comma lists', () => {
    expect(parseStringList('["*"]')).toEqual(['*']);
    expect(parseStringList('https://a, https://b')).toEqual(['https://a', 'https://b']);
    expect(() => parseStringList('[1]')).toThrow(/JSON list/);
  });
});

describe('resolveServerConfig', () => {
  it("fills vLLM's defaults", () => {
    const c = resolveServerConfig({}, {});
    expect(c).toMatchObject({
      model: null,
      port: 8000,
      apiKeys: [],
      servedModelNames: ['ortllm-dummy'],
      maxNumSeqs: 128,
      maxNumBatchedTokens: 2048,
      schedulingPolicy: 'fcfs',
      generationConfig: 'auto',
      responseRole: 'assistant',
      blockSize: 16,
      enablePrefixCaching: true,
      maxLogprobs: 20,
      allowedOrigins: ['*'],
      logLevel: 'info',
      device: 'cpu',
    });
    expect(resolveServerConfig({ device: 'cuda' }, {}).maxNumSeqs).toBe(256);
  });

  it('takes VLLM_API_KEY only when --api-key is absent', () => {
    expect(resolveServerConfig({}, { VLLM_API_KEY: 'env' }).apiKeys).toEqual(['env']);
    expect(resolveServerConfig({ apiKeys: ['flag'] }, { VLLM_API_KEY: 'env' }).apiKeys).toEqual(['flag']);
  });

  it('makes --tokens-only imply --skip-tokenizer-init and --enable-scale-out', () => {
    const c = resolveServerConfig({ tokensOnly: true }, {});
    expect(c.skipTokenizerInit).toBe(true);
    expect(c.enableScaleOut).toBe(true);
    expect(toEngineOptions(c).load.skipTokenizer).toBe(true);
  });

  it('maps onto EngineOptions', () => {
    const c = resolveServerConfig(
      { model: '/m.gguf', servedModelNames: ['a', 'b'], kvCacheMemoryBytes: 1024, enablePrefixCaching: false, maxModelLen: 256 },
      {},
    );
    expect(toEngineOptions(c)).toEqual({
      load: { model: '/m.gguf', loadFormat: 'auto', loadWeights: true, mmProcessorKwargs: null, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto', overrideGenerationConfig: null, tokenizer: null, hfOverrides: null, disableSlidingWindow: false, serving: { runner: 'auto', convert: 'auto', poolerConfig: null } },
      modelName: 'a',
      maxModelLen: 256,
      maxNumSeqs: 128,
      maxNumBatchedTokens: 2048,
      schedulingPolicy: 'fcfs',
      kvCacheMemoryBytes: 1024,
      blockSize: 16,
      enablePrefixCaching: false,
      mmProcessorCacheBytes: 4 * 2 ** 30,
      device: 'cpu',
      intraOpThreads: null,
      useWorker: true,
      maxNumQueuedReqs: 4096,
      tokenizerPoolSize: defaultTokenizerPoolSize(),
      structuredOutputs: { disableAnyWhitespace: false, disableAdditionalProperties: false, maxWhitespace: 1 },
      structuredOutputsLimits: DEFAULT_STRUCTURED_OUTPUTS_LIMITS,
      dtype: 'auto',
      seed: 0,
      gpuMemoryUtilization: null,
      kvCacheDtype: 'auto',
      numBlocksOverride: null,
      partialPrefills: { maxNumPartialPrefills: 1, maxLongPartialPrefills: 1, longPrefillTokenThreshold: 0 },
    });
  });

  it('reads --structured-outputs-config (vLLM StructuredOutputsConfig as JSON) and refuses what it cannot honour', async () => {
    const { config } = await parse(['--structured-outputs-config', '{"backend": "xgrammar", "disable_any_whitespace": true}']);
    expect(config!.structuredOutputsConfig).toEqual({ backend: 'xgrammar', disableAnyWhitespace: true, disableAdditionalProperties: false, maxWhitespace: 1 });
    expect(toEngineOptions(config!).structuredOutputs).toEqual({ disableAnyWhitespace: true, disableAdditionalProperties: false, maxWhitespace: 1 });
    // max_whitespace (not a vLLM key): a bound on whitespace runs in JSON, null for none.
    const bounded = await parse(['--structured-outputs-config', '{"max_whitespace": 8}']);
    expect(toEngineOptions(bounded.config!).structuredOutputs).toMatchObject({ maxWhitespace: 8 });
    const unbounded = await parse(['--structured-outputs-config', '{"max_whitespace": null}']);
    expect(toEngineOptions(unbounded.config!).structuredOutputs).toMatchObject({ maxWhitespace: null });
    // vLLM's deprecated spellings: the two switches are folded in; the backend must be xgrammar / auto.
    const { config: old } = await parse(['--guided-decoding-disable-any-whitespace', '--guided-decoding-backend', 'xgrammar']);
    expect(old!.structuredOutputsConfig).toMatchObject({ disableAnyWhitespace: true, disableAdditionalProperties: false });
    expect((await parse(['--guided-decoding-backend', 'outlines'])).code).toBe(2);
    for (const bad of ['{"backend": "outlines"}', '{"reasoning_parser": "deepseek_r1"}', '{"disable_any_whitespace": "yes"}', '{"max_whitespace": 0}', '{"max_whitespace": 2.5}', '{"max_whitespace": "4"}', 'xgrammar']) {
      const { code, stderr } = await parse(['--structured-outputs-config', bad]);
      expect(code).toBe(2);
      expect(stderr).toMatch(/structured-outputs-config/);
    }
  });

  it('rejects values that cannot be served', () => {
    expect(() => resolveServerConfig({ port: 70000 }, {})).toThrow(ConfigError);
    expect(() => resolveServerConfig({ sslKeyfile: '/k.pem' }, {})).toThrow(/together/);
    expect(() => resolveServerConfig({ maxNumSeqs: 0 }, {})).toThrow(/max-num-seqs/);
    expect(() => resolveServerConfig({ maxJsonDepth: 0 }, {})).toThrow(/max-json-depth/);
    expect(() => resolveServerConfig({ maxNumQueuedReqs: 0 }, {})).toThrow(/max-num-queued-reqs/);
    expect(() => resolveServerConfig({ tokenizerPoolSize: -1 }, {})).toThrow(/tokenizer-pool-size/);
  });

  it('has no text workers without a tokenizer', () => {
    expect(toEngineOptions(resolveServerConfig({ tokensOnly: true }, {})).tokenizerPoolSize).toBe(0);
    // Two text workers at least, so a normal prompt never waits behind a huge one; four at most.
    expect(defaultTokenizerPoolSize()).toBeGreaterThanOrEqual(2);
    expect(defaultTokenizerPoolSize()).toBeLessThanOrEqual(4);
  });

  it('normalizes --root-path', () => {
    expect(resolveServerConfig({ rootPath: 'llm/' }, {}).rootPath).toBe('/llm');
  });
});

describe('ortllm serve flags', () => {
  it('parses the positional model and vLLM flags', async () => {
    const { config, code } = await parse([
      'm.gguf',
      '--port', '0',
      '--api-key', 'a', 'b',
      '--api-key', 'c',
      '--served-model-name', 'x', 'y',
      '--max-model-len', '1k',
      '--kv-cache-memory', '512MiB',
      '--no-enable-prefix-caching',
      '--log-level', 'debug',
      '--allowed-origins', '["https://a"]',
      '--enable-request-id-headers',
    ]);
    expect(code).toBe(0);
    expect(config).toMatchObject({
      model: 'm.gguf',
      port: 0,
      apiKeys: ['a', 'b', 'c'],
      servedModelNames: ['x', 'y'],
      maxModelLen: 1000,
      kvCacheMemoryBytes: 512 * 2 ** 20,
      enablePrefixCaching: false,
      logLevel: 'debug',
      allowedOrigins: ['https://a'],
      enableRequestIdHeaders: true,
    });
  });

  it('accepts --model instead of the positional argument', async () => {
    expect((await parse(['--model', 'm.gguf'])).config?.model).toBe('m.gguf');
    const both = await parse(['a.gguf', '--model', 'b.gguf']);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/differ/);
  });

  it('exits 2 with a clear message on unknown or malformed flags', async () => {
    const unknown = await parse(['--no-such-flag']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(/unknown option '--no-such-flag'/);
    const malformed = await parse(['--port', 'eighty']);
    expect(malformed.code).toBe(2);
    expect(malformed.stderr).toMatch(/--port.*'eighty' is not an integer/);
    const badChoice = await parse(['--device', 'tpu']);
    expect(badChoice.code).toBe(2);
    expect(badChoice.stderr).toMatch(/Allowed choices are cpu, cuda/);
    const invalid = await parse(['--port', '99999']);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toMatch(/--port must be 0..65535/);
  });
});

describe('pooling flags (--runner, --convert, --pooler-config, deprecated --task)', () => {
  it('parses them and hands them to the model loader', async () => {
    const { config, code } = await parse(['m', '--runner', 'pooling', '--convert', 'embed', '--pooler-config', '{"pooling_type": "MEAN", "normalize": false, "dimensions": 64}']);
    expect(code).toBe(0);
    expect(toEngineOptions(config!).load.serving).toEqual({ runner: 'pooling', convert: 'embed', poolerConfig: { pooling_type: 'MEAN', normalize: false, dimensions: 64 } });
    for (const bad of ['{"pooling": "MEAN"}', '{"dimensions": 0}', '[1]', 'MEAN']) {
      const result = await parse(['--pooler-config', bad]);
      expect([bad, result.code]).toEqual([bad, 2]);
    }
    expect((await parse(['--pooler-config', '{"pooling": "MEAN"}'])).stderr).toMatch(/unknown key 'pooling'/);
    expect((await parse(['--runner', 'encode'])).stderr).toMatch(/Allowed choices are auto, generate, pooling/);
  });

  it('maps --task as vLLM does, with a deprecation warning, and refuses it next to --runner / --convert', () => {
    const warn = jest.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      expect(resolveServerConfig({ task: 'embed' }, {})).toMatchObject({ runner: 'pooling', convert: 'embed' });
      expect(resolveServerConfig({ task: 'embedding' }, {})).toMatchObject({ runner: 'pooling', convert: 'embed' });
      expect(resolveServerConfig({ task: 'score' }, {})).toMatchObject({ runner: 'pooling', convert: 'auto' });
      expect(resolveServerConfig({ task: 'generate' }, {})).toMatchObject({ runner: 'generate', convert: 'auto' });
      expect(resolveServerConfig({ task: 'auto' }, {})).toMatchObject({ runner: 'auto', convert: 'auto' });
      expect(warn).toHaveBeenCalledWith(expect.stringMatching(/--task is deprecated .* use --runner pooling --convert embed instead/), 'DeprecationWarning');
      expect(() => resolveServerConfig({ task: 'embed', runner: 'pooling' }, {})).toThrow(ConfigError);
    } finally {
      warn.mockRestore();
    }
  });
});

describe('docs/serve-flags.md', () => {
  const page = readFileSync(join(__dirname, '../../../docs/serve-flags.md'), 'utf8');
  it('documents every serve flag as (a) implemented', () => {
    for (const spec of SERVER_FLAGS) expect([spec.flags, page.includes(`| \`${spec.flags}\` | (a) |`)]).toEqual([spec.flags, true]);
  });

  it('gives every other vLLM flag its policy: (b) no effect or (c) refused', () => {
    for (const policy of VLLM_FLAG_POLICY) {
      const row = page.split('\n').find((line) => line.startsWith(`| \`${policy.flags}\``));
      expect([policy.flags, row?.includes(policy.status === 'no-effect' ? '| (b) |' : '| (c) |')]).toEqual([policy.flags, true]);
    }
  });

  it('holds the flag table `npm run -s flag-table` prints, verbatim (rows, order, defaults, meanings)', () => {
    expect(page).toContain(flagTableMarkdown());
  });

  it('documents every VLLM_* variable with a meaning here', () => {
    for (const variable of VLLM_ENV_VARS) expect([variable.name, page.includes(`| \`${variable.name}\` |`)]).toEqual([variable.name, true]);
  });
});
