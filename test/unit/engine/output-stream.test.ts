// OutputStream hands a consumer that fell behind everything queued, folded into one output
// (src/engine/output-merge.ts): what the consumer accumulates is the same as taking the outputs
// one by one, only in fewer pieces.

import { BACKLOG_HIGH, OutputStream } from '../../../src/engine/output-stream';
import { OUTPUT_KIND, type CompletionOutput, type PositionLogprobs, type RequestOutput } from '../../../src/engine/types';

const PROMPT = [1, 2, 3];

function lp(tokenId: number): PositionLogprobs {
  return { chosen: { tokenId, logprob: -tokenId / 10, rank: 1 }, top: [{ tokenId, logprob: -tokenId / 10, rank: 1 }] };
}

function completion(index: number, tokenIds: number[], extra: Partial<CompletionOutput> = {}): CompletionOutput {
  return {
    index,
    text: tokenIds.map((t) => `<${t}>`).join(''),
    tokenIds,
    cumulativeLogprob: -tokenIds.reduce((a, t) => a + t, 0),
    logprobs: tokenIds.map(lp),
    finishReason: null,
    stopReason: null,
    ...extra,
  };
}

function output(outputs: CompletionOutput[], extra: Partial<RequestOutput> = {}): RequestOutput {
  return { requestId: 'r', promptTokenIds: [], promptLogprobs: null, outputs, finished: false, numCachedTokens: 0, ...extra };
}

describe('OutputStream merges what the consumer has not taken yet', () => {
  it('DELTA, n = 2: appends per completion index, logprobs in order, finish state from the last piece', async () => {
    const stream = new OutputStream(PROMPT, OUTPUT_KIND.DELTA);
    const promptLogprobs = [null, lp(2), lp(3)];
    stream.push(output([completion(0, [10]), completion(1, [20])], { promptLogprobs, numCachedTokens: 0 }));
    stream.push(output([completion(1, [21])], { numCachedTokens: 2 }));
    stream.push(output([completion(0, [11])]));
    stream.push(output([completion(0, [12], { finishReason: 'stop', stopReason: 7 }), completion(1, [22], { finishReason: 'length' })], { finished: true, numCachedTokens: 2 }));
    expect(stream.backlog).toBe(4);

    const merged = await stream.next();
    expect(stream.backlog).toBe(0);
    expect(merged.finished).toBe(true);
    expect(merged.promptTokenIds).toBe(PROMPT);
    expect(merged.promptLogprobs).toBe(promptLogprobs);
    expect(merged.numCachedTokens).toBe(2);
    expect(merged.error).toBeUndefined();
    expect(merged.outputs).toEqual([
      {
        index: 0,
        text: '<10><11><12>',
        tokenIds: [10, 11, 12],
        cumulativeLogprob: -12,
        logprobs: [lp(10), lp(11), lp(12)],
        finishReason: 'stop',
        stopReason: 7,
      },
      {
        index: 1,
        text: '<20><21><22>',
        tokenIds: [20, 21, 22],
        cumulativeLogprob: -22,
        logprobs: [lp(20), lp(21), lp(22)],
        finishReason: 'length',
        stopReason: null,
      },
    ]);
  });

  it('DELTA: a completion that finished earlier keeps its reason while the other runs on', async () => {
    const stream = new OutputStream(PROMPT, OUTPUT_KIND.DELTA);
    stream.push(output([completion(0, [10], { finishReason: 'stop', stopReason: 'end' }), completion(1, [20])]));
    stream.push(output([completion(1, [21])]));
    const merged = await stream.next();
    expect(merged.outputs.map((o) => [o.index, o.tokenIds, o.finishReason, o.stopReason])).toEqual([
      [0, [10], 'stop', 'end'],
      [1, [20, 21], null, null],
    ]);
  });

  it('takes one output at a time when the consumer keeps up, and waits for the next', async () => {
    const stream = new OutputStream(PROMPT, OUTPUT_KIND.DELTA);
    stream.push(output([completion(0, [10])]));
    expect((await stream.next()).outputs[0].tokenIds).toEqual([10]);
    const waiting = stream.next();
    stream.push(output([completion(0, [11])]));
    stream.push(output([completion(0, [12])]));
    expect((await waiting).outputs[0].tokenIds).toEqual([11]);
    expect((await stream.next()).outputs[0].tokenIds).toEqual([12]);
  });

  it('never folds an error away: the outputs before it come first, the error on its own', async () => {
    const stream = new OutputStream(PROMPT, OUTPUT_KIND.DELTA);
    stream.push(output([completion(0, [10])]));
    stream.push(output([completion(0, [11])]));
    stream.push(output([completion(0, [], { finishReason: 'error' })], { finished: true, error: 'the model failed' }));
    const before = await stream.next();
    expect(before.outputs[0].tokenIds).toEqual([10, 11]);
    expect(before.finished).toBe(false);
    expect(before.error).toBeUndefined();
    const failed = await stream.next();
    expect(failed.error).toBe('the model failed');
    expect(failed.outputs[0].finishReason).toBe('error');
  });

  it('delivers what was queued before a failure, then the failure', async () => {
    const stream = new OutputStream(PROMPT, OUTPUT_KIND.DELTA);
    stream.push(output([completion(0, [10])]));
    stream.push(output([completion(0, [11])]));
    stream.fail(new Error('worker died'));
    expect((await stream.next()).outputs[0].tokenIds).toEqual([10, 11]);
    await expect(stream.next()).rejects.toThrow('worker died');
  });

  it('CUMULATIVE: the newer output replaces the older per completion index', async () => {
    const stream = new OutputStream(PROMPT, OUTPUT_KIND.CUMULATIVE);
    const promptLogprobs = [null, lp(2), lp(3)];
    stream.push(output([completion(0, [10]), completion(1, [20])], { promptLogprobs }));
    stream.push(output([completion(0, [10, 11]), completion(1, [20, 21])], { promptLogprobs }));
    const last = output([completion(0, [10, 11, 12], { finishReason: 'length' }), completion(1, [20, 21, 22], { finishReason: 'length' })], {
      promptLogprobs,
      finished: true,
    });
    stream.push(last);
    const merged = await stream.next();
    expect(merged.outputs).toEqual(last.outputs);
    expect(merged.finished).toBe(true);
    expect(merged.promptLogprobs).toBe(promptLogprobs);
  });

  it('still pauses the request at BACKLOG_HIGH and resumes it once the consumer takes the backlog', async () => {
    const flow = { pause: jest.fn(), resume: jest.fn() };
    const stream = new OutputStream(PROMPT, OUTPUT_KIND.DELTA, flow);
    for (let i = 0; i < BACKLOG_HIGH; i++) stream.push(output([completion(0, [i])]));
    expect(flow.pause).toHaveBeenCalledTimes(1);
    const merged = await stream.next();
    expect(merged.outputs[0].tokenIds).toEqual(Array.from({ length: BACKLOG_HIGH }, (_, i) => i));
    expect(flow.resume).toHaveBeenCalledTimes(1);
  });
});
