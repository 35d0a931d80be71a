// --speculative-config on the command line, as vLLM users write it (JSON, dotted keys, a --config
// YAML mapping): a valid config reaches the engine normalised; bad JSON, keys this server does not
// honour and bad values stop start-up with exit code 2 and a message that names the key.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli, type CliOutcome } from '../../helpers/run-cli';

function serve(args: string[]): Promise<CliOutcome> {
  return runCli(['serve', '/models/m.gguf', ...args]);
}

const NGRAM = { method: 'ngram', numSpeculativeTokens: 4, promptLookupMax: 3, promptLookupMin: 1, model: null, disableByBatchSize: null };

describe('--speculative-config', () => {
  it('starts with a prompt-lookup config, normalised for the engine', async () => {
    const r = await serve(['--speculative-config', '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":3,"prompt_lookup_min":1}']);
    expect(r.code).toBe(0);
    expect(r.config!.speculativeConfig).toEqual(NGRAM);
  });

  it('takes vLLM\'s other spellings: dotted keys, underscores and a --config YAML mapping', async () => {
    const dotted = await serve(['--speculative_config.method', 'ngram', '--speculative-config.num_speculative_tokens', '4', '--speculative-config.prompt_lookup_max', '3', '--speculative-config.prompt_lookup_min', '1']);
    expect(dotted.code).toBe(0);
    expect(dotted.config!.speculativeConfig).toEqual(NGRAM);
    const yaml = join(mkdtempSync(join(tmpdir(), 'ortllm-spec-cli-')), 'serve.yaml');
    writeFileSync(yaml, 'speculative-config:\n  method: ngram\n  num_speculative_tokens: 4\n  prompt_lookup_max: 3\n  prompt_lookup_min: 1\n');
    const fromFile = await serve(['--config', yaml]);
    expect(fromFile.code).toBe(0);
    expect(fromFile.config!.speculativeConfig).toEqual(NGRAM);
  });

  it('fills in vLLM\'s defaults: lookup 5..5 with neither bound, the other bound from the one given, the method from "model"', async () => {
    const parsed = async (json: object) => (await serve(['--speculative-config', JSON.stringify(json)])).config!.speculativeConfig;
    expect(await parsed({ method: 'ngram', num_speculative_tokens: 2 })).toMatchObject({ promptLookupMax: 5, promptLookupMin: 5 });
    expect(await parsed({ method: 'ngram', num_speculative_tokens: 2, prompt_lookup_max: 4 })).toMatchObject({ promptLookupMax: 4, promptLookupMin: 4 });
    expect(await parsed({ model: '[ngram]', num_speculative_tokens: 2 })).toMatchObject({ method: 'ngram', model: null });
    expect(await parsed({ model: '/models/draft.gguf', num_speculative_tokens: 2, disable_by_batch_size: 8 })).toMatchObject({
      method: 'draft_model',
      model: '/models/draft.gguf',
      disableByBatchSize: 8,
    });
  });

  it.each([
    ['JSON that does not parse', '{method: ngram}', /--speculative-config must be a JSON object: /],
    ['JSON that is not an object', '[1, 2]', /--speculative-config must be a JSON object/],
    ['a key not honoured here', '{"method":"ngram","num_speculative_tokens":2,"draft_tensor_parallel_size":1}', /"draft_tensor_parallel_size" is not supported here \(supported: method, model, num_speculative_tokens/],
    ['a method not implemented', '{"method":"eagle","model":"m","num_speculative_tokens":2}', /method must be one of ngram, draft_model, got "eagle"/],
    ['no method and no model', '{"num_speculative_tokens":2}', /give "method" \(ngram or draft_model\) or "model"/],
    ['no num_speculative_tokens', '{"method":"ngram"}', /num_speculative_tokens must be given/],
    ['num_speculative_tokens 0', '{"method":"ngram","num_speculative_tokens":0}', /num_speculative_tokens must be an integer >= 1, got 0/],
    ['num_speculative_tokens as a string', '{"method":"ngram","num_speculative_tokens":"4"}', /num_speculative_tokens must be an integer >= 1, got "4"/],
    ['num_speculative_tokens above the limit', '{"method":"ngram","num_speculative_tokens":33}', /num_speculative_tokens \(33\) must be at most 32/],
    ['prompt_lookup_min above prompt_lookup_max', '{"method":"ngram","num_speculative_tokens":2,"prompt_lookup_min":4,"prompt_lookup_max":2}', /prompt_lookup_min \(4\) must be <= prompt_lookup_max \(2\)/],
    ['a fractional prompt_lookup_max', '{"method":"ngram","num_speculative_tokens":2,"prompt_lookup_max":2.5}', /prompt_lookup_max must be an integer >= 1, got 2.5/],
    ['disable_by_batch_size 1', '{"method":"ngram","num_speculative_tokens":2,"disable_by_batch_size":1}', /disable_by_batch_size must be an integer >= 2, got 1/],
    ['draft_model without its model', '{"method":"draft_model","num_speculative_tokens":2}', /method "draft_model" needs "model"/],
    ['a draft model path with method ngram', '{"method":"ngram","model":"/models/draft.gguf","num_speculative_tokens":2}', /"model" names a draft model, which method "ngram" does not use/],
  ])('refuses %s with exit code 2, naming the problem', async (_, json, message) => {
    const r = await serve(['--speculative-config', json]);
    expect(r.code).toBe(2);
    expect(r.config).toBeNull();
    expect(r.stderr).toMatch(message);
  });
});
