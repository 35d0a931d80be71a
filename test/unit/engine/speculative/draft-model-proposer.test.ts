/** @jest-environment ./test/helpers/ort-environment.js */
// The draft-model proposer on its own, stories260K drafting: drafts after any history of kept and
// rejected tokens are those of a fresh proposer, long prompts catch up in bounded chunks, a full
// pool means no drafts (never an error), and release gives the blocks back.

import { DraftBlockPool } from '../../../../src/engine/speculative/draft-kv-pool';
import { DraftModelProposer } from '../../../../src/engine/speculative/draft-model-proposer';
import type { DraftRequest } from '../../../../src/engine/speculative/proposer';
import { createRunner } from '../../../../src/model/runner';
import type { LoadedModel, ModelRunner } from '../../../../src/model/types';
import { loadStories, prompts, STORIES } from '../engine-fixtures';
import { needs } from '../../../helpers/needs';

const onStories = needs(STORIES);
const BLOCK = 16;

onStories.describe('DraftModelProposer on stories260K', () => {
  let model: LoadedModel;
  const runners: ModelRunner[] = [];

  async function proposer(numBlocks: number, catchUpTokens = 512): Promise<DraftModelProposer> {
    const runner = await createRunner(model, { blockSize: BLOCK, numBlocks, device: 'cpu', intraOpThreads: 1, maxModelLen: 256 });
    runners.push(runner);
    return new DraftModelProposer(runner, new DraftBlockPool(numBlocks, BLOCK), catchUpTokens);
  }

  const ask = (seqId: string, tokenIds: number[], maxDrafts = 4): DraftRequest => ({ seqId, tokenIds, numPromptTokens: tokenIds.length, maxDrafts });

  beforeAll(async () => {
    model = await loadStories();
  });
  afterAll(async () => {
    for (const r of runners) await r.dispose();
  });

  it('drafts after kept, rejected and replaced tokens as a fresh proposer does', async () => {
    const p = await proposer(64);
    const [a, b] = prompts(model, 12).slice(10);
    let seqA = [...a];
    let seqB = [...b];
    for (let round = 0; round < 6; round++) {
      const drafts = await p.propose([ask('a', seqA), ask('b', seqB)]);
      const fresh = await (await proposer(64)).propose([ask('a', seqA), ask('b', seqB)]);
      expect(drafts).toEqual(fresh);
      expect(drafts.map((d) => d.length)).toEqual([4, 4]);
      // a keeps `round % 5` drafts and then a token of its own; b keeps all four and one more.
      const keep = round % 5;
      seqA = [...seqA, ...drafts[0].slice(0, keep), (drafts[0][keep] ?? 0) + 1];
      seqB = [...seqB, ...drafts[1], 7];
    }
    expect(p.pool.numUsed).toBeGreaterThan(0);
    p.release('a');
    p.release('b');
    expect(p.pool.numUsed).toBe(0);
  });

  it('catches up on a long prompt in chunks within the budget, drafting once it has all of it', async () => {
    const p = await proposer(64, 20);
    const long = prompts(model, 12).flat().slice(0, 50);
    expect(await p.propose([ask('s', long, 3)])).toEqual([[]]);
    expect(await p.propose([ask('s', long, 3)])).toEqual([[]]);
    const drafts = await p.propose([ask('s', long, 3)]);
    expect(drafts).toEqual(await (await proposer(64)).propose([ask('s', long, 3)]));
    expect(drafts[0]).toHaveLength(3);
  });

  it('gives no drafts to the sequences a full pool cannot hold, and drafts for them once blocks free up', async () => {
    const p = await proposer(3);
    const ps = prompts(model, 12).slice(8);
    // Each sequence needs two blocks: the first fits, the second not, the third neither.
    const asks = ps.slice(0, 3).map((t, i) => ask(`s${i}`, [...t, ...t].slice(0, 20)));
    const drafts = await p.propose(asks);
    expect(drafts.map((d) => d.length)).toEqual([4, 0, 0]);
    expect(p.pool.numUsed).toBe(2);
    p.release('s0');
    expect(p.pool.numUsed).toBe(0);
    expect((await p.propose(asks.slice(1))).map((d) => d.length)).toEqual([4, 0]);
  });

  it('defers a release that arrives during a propose until it ends', async () => {
    const p = await proposer(8);
    const [t] = prompts(model, 12).slice(11);
    const pending = p.propose([ask('x', t)]);
    p.release('x');
    expect((await pending)[0]).toHaveLength(4);
    expect(p.pool.numUsed).toBe(0);
  });
});
