// A real EngineCore on stories260K (its own runner, the real grammar workers) with a proposer the
// test chooses, run step by step until its requests finish: for tests that set the drafts
// themselves (Speculation built around their own DraftProposer). Also: in-process engines with
// and without prompt lookup, and the sum of a run's speculative decoding stats.

import { createInProcessEngine } from '../../../../src/engine';
import { CompletionProcessorFactory } from '../../../../src/engine/core/completion-processor';
import { EngineCore } from '../../../../src/engine/core/engine-core';
import { startGrammarEngines, type GrammarEngines } from '../../../../src/engine/core/grammar-admission';
import { Speculation } from '../../../../src/engine/core/speculation';
import type { DraftProposer, DraftRequest } from '../../../../src/engine/speculative/proposer';
import { normalizeSpeculativeConfig } from '../../../../src/engine/speculative/speculative-config';
import type { EngineClient, EngineRequest, IterationStats, RequestOutput, SpecDecodingStats } from '../../../../src/engine/types';
import { createRunner } from '../../../../src/model/runner';
import type { LoadedModel, ModelRunner } from '../../../../src/model/types';
import { engineOptions } from '../engine-fixtures';

const MAX_MODEL_LEN = 256;

export interface CoreRun {
  /** The final output of each request, in the order given. */
  outputs: RequestOutput[];
  spec: SpecDecodingStats;
  preemptions: number;
  /** Sequences with drafts that sat a step out because their grammar masks were late. */
  satOutWithDrafts: number;
  /** KV cache usage once every request finished. */
  kvUsage: number;
}

export interface SpecCoreOptions {
  /** num_speculative_tokens (default 4). */
  k?: number;
  /** KV blocks of 16 tokens (default 96; a few force preemption). */
  numBlocks?: number;
}

export class SpecCore {
  private satOutWithDrafts = 0;

  private constructor(
    private readonly core: EngineCore,
    private readonly runner: ModelRunner,
    /** The grammar workers (a test may keep the matcher worker busy with compiles of its own). */
    readonly grammars: GrammarEngines,
    private readonly k: number,
    private readonly iterations: IterationStats[],
    private readonly outputs: Map<string, RequestOutput>,
  ) {
    const update = core.scheduler.updateFromOutput.bind(core.scheduler);
    core.scheduler.updateFromOutput = (plan, sampled, sitOut, verified) => {
      for (const { seq } of plan.scheduled) if (sitOut?.has(seq.seqId) && seq.draftTokenIds.length > 0) this.satOutWithDrafts++;
      update(plan, sampled, sitOut, verified);
    };
  }

  /** `proposer` null: no speculative decoding (the reference run). */
  static async start(model: LoadedModel, proposer: DraftProposer | null, options: SpecCoreOptions = {}): Promise<SpecCore> {
    const k = options.k ?? 4;
    const runner = await createRunner(model, { blockSize: 16, numBlocks: options.numBlocks ?? 96, device: 'cpu', intraOpThreads: 1 });
    const grammars = await startGrammarEngines(model.tokenizer!, model.config.vocabSize, model.eosTokenIds);
    const config = normalizeSpeculativeConfig({ method: 'ngram', num_speculative_tokens: k });
    const speculation = proposer ? new Speculation(config, proposer, MAX_MODEL_LEN) : undefined;
    const processors = new CompletionProcessorFactory({ vocabSize: model.config.vocabSize, eosTokenIds: model.eosTokenIds, maxModelLen: MAX_MODEL_LEN, tokenizer: model.tokenizer });
    const iterations: IterationStats[] = [];
    const outputs = new Map<string, RequestOutput>();
    const core = new EngineCore(
      runner,
      { maxModelLen: MAX_MODEL_LEN, maxNumSeqs: 16, maxNumBatchedTokens: 64, schedulingPolicy: 'fcfs', enablePrefixCaching: true, speculation },
      processors,
      {
        onStep: (outs, _stats, iteration) => {
          iterations.push(iteration);
          for (const o of outs) if (o.finished) outputs.set(o.requestId, o);
        },
        onReject: (requestId, err) => {
          throw new Error(`request ${requestId} refused: ${String(err)}`);
        },
      },
      { engines: grammars },
    );
    return new SpecCore(core, runner, grammars, k, iterations, outputs);
  }

  /** Runs the requests together until all have finished. */
  async run(requests: EngineRequest[]): Promise<CoreRun> {
    this.iterations.length = 0;
    this.satOutWithDrafts = 0;
    for (const r of requests) this.core.addRequest(r);
    while (requests.some((r) => !this.outputs.has(r.requestId))) {
      if (this.core.hasWork()) await this.core.step();
      // Requests whose grammar compiles join between steps: wait for them.
      else await new Promise<void>((resolve) => (this.core.onWork = resolve));
    }
    const outputs = requests.map((r) => this.outputs.get(r.requestId)!);
    const preemptions = this.iterations.reduce((n, it) => n + it.numPreemptions, 0);
    return { outputs, spec: sumSpecStats(this.iterations, this.k), preemptions, satOutWithDrafts: this.satOutWithDrafts, kvUsage: this.core.stats().kvCacheUsage };
  }

  async close(): Promise<void> {
    await Promise.all([this.grammars.client.close(), this.grammars.trials.close()]);
    await this.runner.dispose();
  }
}

/** In-process engines (the fixtures' options) without and with prompt lookup of 1..3-grams, k drafts; `iterations` gets the second's stats. */
export async function ngramEnginePair(model: LoadedModel, k: number): Promise<{ plain: EngineClient; spec: EngineClient; iterations: IterationStats[] }> {
  const plain = await createInProcessEngine(model, engineOptions());
  const config = normalizeSpeculativeConfig({ method: 'ngram', num_speculative_tokens: k, prompt_lookup_max: 3, prompt_lookup_min: 1 });
  const spec = await createInProcessEngine(model, engineOptions({ speculative: config }));
  const iterations: IterationStats[] = [];
  spec.onIteration((s) => iterations.push(s));
  return { plain, spec, iterations };
}

export function sumSpecStats(iterations: readonly IterationStats[], k: number): SpecDecodingStats {
  const sum: SpecDecodingStats = { numDrafts: 0, numDraftTokens: 0, numAcceptedTokens: 0, acceptedPerPosition: new Array<number>(k).fill(0) };
  for (const { specDecoding: s } of iterations) {
    if (!s) continue;
    sum.numDrafts += s.numDrafts;
    sum.numDraftTokens += s.numDraftTokens;
    sum.numAcceptedTokens += s.numAcceptedTokens;
    s.acceptedPerPosition.forEach((n, i) => (sum.acceptedPerPosition[i] += n));
  }
  return sum;
}

/** What a scripted proposer knows of a sequence: its output so far and how many drafts it may give. */
export interface DraftAsk {
  prompt: readonly number[];
  output: readonly number[];
  maxDrafts: number;
}

/** A proposer whose drafts a function computes from each sequence's prompt and output (a test's script). */
export class ScriptedProposer implements DraftProposer {
  /** Every ask with the drafts given, in order. */
  readonly proposed: Array<DraftAsk & { drafts: number[] }> = [];

  constructor(private readonly script: (ask: DraftAsk) => number[] | Promise<number[]>) {}

  propose(requests: readonly DraftRequest[]): Promise<number[][]> {
    return Promise.all(
      requests.map(async (r) => {
        const ask = { prompt: r.tokenIds.slice(0, r.numPromptTokens), output: r.tokenIds.slice(r.numPromptTokens), maxDrafts: r.maxDrafts };
        const drafts = (await this.script(ask)).slice(0, r.maxDrafts);
        this.proposed.push({ ...ask, drafts });
        return drafts;
      }),
    );
  }

  release(): void {}

  dispose(): Promise<void> {
    return Promise.resolve();
  }
}

/**
 * Drafts that continue a known output (a reference run's, keyed by prompt) while the sequence
 * follows it; `then` may rewrite them. None once the sequence has left it.
 */
export function oracle(
  known: ReadonlyMap<string, readonly number[]>,
  then: (drafts: number[], ask: DraftAsk) => number[] | Promise<number[]> = (d) => d,
): (ask: DraftAsk) => number[] | Promise<number[]> {
  return (ask) => {
    const want = known.get(ask.prompt.join());
    if (!want || ask.output.some((t, i) => want[i] !== t)) return [];
    return then(want.slice(ask.output.length, ask.output.length + ask.maxDrafts), ask);
  };
}
