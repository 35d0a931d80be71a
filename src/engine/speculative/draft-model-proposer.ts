// A smaller model with the target's vocabulary drafts the next tokens greedily (vLLM's
// "draft_model" method). It keeps its own KV pool: per sequence, the tokens whose K/V it has
// computed. Each propose() first computes what a sequence lacks (the prompt the first time, the
// tokens kept after a verification), then k-1 single-token steps, every step batched over all
// sequences. Drafts are the argmax of its logits, so the rejection sampler's q is one-hot.

import { loadModel } from '../../model/load-model';
import { createRunner, resolveKvCacheDtype } from '../../model/runner';
import type { LoadedModel, LoadModelOptions, ModelRunner, StepSequence } from '../../model/types';
import { argmax } from '../sampling/argmax';
import { readMemoryInfo } from '../core/kv-plan';
import { checkDraftModel } from './draft-model-checks';
import { DraftBlockPool, planDraftPool } from './draft-kv-pool';
import type { DraftProposer, DraftRequest, ProposerContext, ProposerFactory } from './proposer';

/** Tokens the draft catches up on per propose() at least, whatever the step's token budget. */
const MIN_CATCH_UP_TOKENS = 512;

interface DraftSequence {
  /** Tokens whose K/V are in the draft's cache, from position 0. */
  tokens: number[];
  /** Its blocks in the draft's pool, covering `tokens`. */
  blocks: number[];
}

/** One sequence drafting in this propose(). */
interface Drafting {
  index: number;
  seq: DraftSequence;
  maxDrafts: number;
}

export class DraftModelProposer implements DraftProposer {
  private readonly sequences = new Map<string, DraftSequence>();
  /** Released while a propose() was running: dropped when it ends. */
  private readonly releasedDuringPropose = new Set<string>();
  private proposing = false;

  constructor(
    private readonly runner: ModelRunner,
    readonly pool: DraftBlockPool,
    private readonly catchUpTokens: number,
  ) {}

  async propose(requests: readonly DraftRequest[]): Promise<number[][]> {
    this.proposing = true;
    try {
      return await this.draftAll(requests);
    } catch (err) {
      // Drafts only speed the target up: a failed draft pass costs this step's drafts, never a request.
      console.error(`[engine] draft model step failed, its cache is dropped: ${err instanceof Error ? err.message : String(err)}`);
      for (const seqId of [...this.sequences.keys()]) this.drop(seqId);
      return requests.map(() => []);
    } finally {
      this.proposing = false;
      for (const seqId of this.releasedDuringPropose) this.drop(seqId);
      this.releasedDuringPropose.clear();
    }
  }

  release(seqId: string): void {
    if (this.proposing) this.releasedDuringPropose.add(seqId);
    else this.drop(seqId);
  }

  async dispose(): Promise<void> {
    this.sequences.clear();
    await this.runner.dispose();
  }

  private drop(seqId: string): void {
    const seq = this.sequences.get(seqId);
    if (!seq) return;
    this.pool.freeAll(seq.blocks);
    this.sequences.delete(seqId);
  }

  private async draftAll(requests: readonly DraftRequest[]): Promise<number[][]> {
    const drafts = requests.map((): number[] => []);
    const catchUp: StepSequence[] = [];
    /** Per catch-up row: the sequence that drafts from its logits, or null (still catching up). */
    const firsts: (Drafting | null)[] = [];
    let budget = this.catchUpTokens;
    requests.forEach((request, index) => {
      const seq = this.sequences.get(request.seqId) ?? { tokens: [], blocks: [] };
      // After a rejection only the prefix shared with the sequence is still valid; the last token is always run (its logits draft).
      const valid = Math.min(commonPrefixLength(seq.tokens, request.tokenIds), request.tokenIds.length - 1);
      const lacking = request.tokenIds.length - valid;
      const chunk = Math.min(lacking, budget);
      if (chunk <= 0) return;
      const complete = chunk === lacking;
      seq.tokens.length = valid;
      // The drafts' K/V too, but the last draft's, which no step computes.
      const end = valid + chunk + (complete ? request.maxDrafts - 1 : 0);
      if (!this.pool.fit(seq.blocks, end)) {
        // The pool is full: this sequence gives its blocks back and gets no drafts this step.
        this.sequences.set(request.seqId, seq);
        this.drop(request.seqId);
        return;
      }
      this.sequences.set(request.seqId, seq);
      budget -= chunk;
      const tokens = request.tokenIds.slice(valid, valid + chunk);
      catchUp.push({ tokens, positionOffset: valid, blockTable: seq.blocks });
      seq.tokens.push(...tokens);
      firsts.push(complete ? { index, seq, maxDrafts: request.maxDrafts } : null);
    });
    if (catchUp.length === 0) return drafts;

    const vocab = this.runner.config.vocabSize;
    let result = await this.runner.step(catchUp);
    let active: Drafting[] = [];
    firsts.forEach((d, row) => {
      if (!d) return;
      drafts[d.index].push(argmax(result.logits, row * vocab, vocab));
      active.push(d);
    });
    for (;;) {
      active = active.filter((d) => drafts[d.index].length < d.maxDrafts);
      if (active.length === 0) break;
      const batch = active.map((d): StepSequence => {
        const out = drafts[d.index];
        const token = out[out.length - 1];
        const positionOffset = d.seq.tokens.length;
        d.seq.tokens.push(token);
        return { tokens: [token], positionOffset, blockTable: d.seq.blocks };
      });
      result = await this.runner.step(batch);
      active.forEach((d, row) => drafts[d.index].push(argmax(result.logits, row * vocab, vocab)));
    }
    return drafts;
  }
}

function commonPrefixLength(a: readonly number[], b: readonly number[]): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Loads the draft model as the target was loaded, with its own tokenizer only to compare vocabularies. */
function loadDraftModel(path: string, ctx: ProposerContext): Promise<LoadedModel> {
  const load: LoadModelOptions = {
    model: path,
    loadFormat: ctx.load?.loadFormat ?? 'auto',
    loadWeights: true,
    skipTokenizer: !ctx.targetTokenizer,
    chatTemplate: null,
    generationConfig: 'vllm',
  };
  return loadModel(load);
}

async function createDraftModelProposer(ctx: ProposerContext): Promise<DraftModelProposer> {
  const path = ctx.config.model;
  if (path === null) throw new Error('--speculative-config: method "draft_model" needs "model", the draft model\'s path');
  const draft = await loadDraftModel(path, ctx);
  checkDraftModel(draft, { config: ctx.target.config, tokenizer: ctx.targetTokenizer ?? null, maxModelLen: ctx.maxModelLen });
  const target = ctx.runnerOptions;
  // The target's cache type, unless the runner the draft gets reads only float32 (resolveKvCacheDtype says so in the log).
  const kvCacheDtype = resolveKvCacheDtype({ ...draft, kvCacheAutoDtype: target.kvCacheDtype ?? 'float32' }, 'auto', target.attention);
  const plan = planDraftPool(draft.config, {
    blockSize: target.blockSize,
    kvCacheDtype,
    maxModelLen: ctx.maxModelLen,
    maxNumSeqs: ctx.maxNumSeqs,
    targetBlocks: target.numBlocks,
    numSpeculativeTokens: ctx.config.numSpeculativeTokens,
    freeBytes: readMemoryInfo(draft, target.device).freeBytes,
  });
  // One pool of every layer and no adapters: drafts run on the base draft model, whatever adapter the target uses.
  const runner = await createRunner(draft, {
    ...target,
    numBlocks: plan.numBlocks,
    kvCacheDtype,
    maxModelLen: ctx.maxModelLen,
    kvPools: undefined,
    lora: undefined,
    consumeWeights: true,
  });
  const c = draft.config;
  const sequences = Math.floor((plan.numBlocks * target.blockSize) / ctx.maxModelLen);
  console.info(
    `[engine] draft model ${path}: ${c.architecture}, ${c.numLayers} layers, hidden size ${c.hiddenSize}; its KV cache: ${plan.numBlocks} blocks of ${target.blockSize} tokens, ` +
      `${kvCacheDtype} (${((plan.numBlocks * plan.bytesPerBlock) / 2 ** 20).toFixed(1)} MiB), ${sequences} sequences of max_model_len ${ctx.maxModelLen}`,
  );
  const catchUp = Math.max(MIN_CATCH_UP_TOKENS, ctx.maxNumBatchedTokens ?? 0);
  return new DraftModelProposer(runner, new DraftBlockPool(plan.numBlocks, target.blockSize), catchUp);
}

export const DRAFT_MODEL_PROPOSER: ProposerFactory = {
  method: 'draft_model',
  create: createDraftModelProposer,
};
