// Shared set-up of the engine tests that run the real runner on stories260K.
import { loadGgufModel } from '../../../src/model/gguf/load-gguf';
import { createTokenizerFromGguf } from '../../../src/model/tokenizer/gguf-tokenizer';
import { kvBytesPerBlock, resolveKvCacheDtype } from '../../../src/model/runner';
import type { LoadedModel } from '../../../src/model/types';
import { defaultSamplingParams } from '../../../src/engine/sampling-params';
import type { EngineClient, EngineOptions, EngineRequest, IterationStats, RequestOutput, SamplingParams } from '../../../src/engine/types';
import { sharedModel } from '../../helpers/model-files';

export const STORIES = sharedModel('stories260K.gguf');

let cached: Promise<LoadedModel> | null = null;

/** stories260K with weights and its GGUF tokenizer. */
export function loadStories(): Promise<LoadedModel> {
  cached ??= (async () => {
    const gguf = await loadGgufModel(STORIES, { loadWeights: true });
    const tokenizer = createTokenizerFromGguf(gguf.file.metadata);
    return {
      source: STORIES,
      config: gguf.config,
      output: { kind: 'logits' },
      pooler: null,
      weights: gguf.weights,
      onnxPath: null,
      tokenizer,
      chatTemplate: null,
      generationDefaults: {},
      eosTokenIds: tokenizer.eosTokenId !== null ? [tokenizer.eosTokenId] : [],
      contextLength: gguf.config.maxPositionEmbeddings,
    };
  })();
  return cached;
}

/** Bytes of one 16-token KV block as the engine stores it for `model` (--kv-cache-dtype auto). */
export function storedBytesPerBlock(model: LoadedModel): number {
  return kvBytesPerBlock(model.config, 16, resolveKvCacheDtype(model, 'auto', undefined, () => {}));
}

export function engineOptions(overrides: Partial<EngineOptions> = {}): EngineOptions {
  return {
    load: { model: STORIES, loadFormat: 'auto', loadWeights: true, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto' },
    modelName: 'stories',
    maxModelLen: 256,
    maxNumSeqs: 32,
    maxNumBatchedTokens: 64,
    schedulingPolicy: 'fcfs',
    kvCacheMemoryBytes: null,
    blockSize: 16,
    enablePrefixCaching: true,
    device: 'cpu',
    intraOpThreads: 1,
    useWorker: false,
    ...overrides,
  };
}

function params(overrides: Partial<SamplingParams> = {}): SamplingParams {
  return { ...defaultSamplingParams(), temperature: 0, ignore_eos: true, max_tokens: 12, ...overrides };
}

let counter = 0;
export function request(promptTokenIds: number[], p: Partial<SamplingParams> = {}, extra: Partial<EngineRequest> = {}): EngineRequest {
  return { requestId: `req-${counter++}`, promptTokenIds, params: params(p), ...extra };
}

/** Drains a generate() stream and returns every output. */
export async function collect(engine: EngineClient, req: EngineRequest, signal?: AbortSignal): Promise<RequestOutput[]> {
  const outputs: RequestOutput[] = [];
  for await (const out of engine.generate(req, signal)) outputs.push(out);
  return outputs;
}

/** The final output of a request. */
export async function finalOutput(engine: EngineClient, req: EngineRequest): Promise<RequestOutput> {
  const outs = await collect(engine, req);
  return outs[outs.length - 1];
}

/** Prompts of varied lengths built from story text. */
export function prompts(model: LoadedModel, count: number): number[][] {
  const words = 'Once upon a time there was a little girl named Lily who loved to play in the park with her dog and her friends every day'.split(' ');
  return Array.from({ length: count }, (_, i) => {
    const text = words.slice(0, 2 + ((i * 7) % (words.length - 2))).join(' ') + (i % 3 === 0 ? '.' : '');
    return model.tokenizer!.encode(text, { addSpecialTokens: true });
  });
}

/** Every iteration's stats while `fn` runs. */
export async function recording<T>(engine: EngineClient, fn: () => Promise<T>): Promise<{ result: T; stats: IterationStats[] }> {
  const stats: IterationStats[] = [];
  const stop = engine.onIteration((s) => stats.push(s));
  try {
    return { result: await fn(), stats };
  } finally {
    stop();
  }
}
