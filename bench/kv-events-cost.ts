// What KV cache events cost per engine step: a 700-token prompt prefilled in one step (43 full
// blocks of 16) through the KV manager with and without an event sink, then the step's batch
// encoded as it goes on the wire. Prints the batch's size and events, and the time per step.
// Run: npm run build && node dist/bench/kv-events-cost.js

import { KvCacheManager, type KvSequence } from '../src/engine/core/kv-cache-manager';
import { KvEventRecorder } from '../src/engine/kv-events/kv-event-recorder';
import { encodeKvEventBatch } from '../src/engine/kv-events/kv-event-wire';
import { MsgpackWriter } from '../src/engine/kv-events/msgpack-writer';

const BLOCK = 16;
const PROMPT = 700;
const ROUNDS = 2000;

function prompt(round: number): KvSequence {
  const tokenIds = Array.from({ length: PROMPT }, (_, i) => (round * 7919 + i * 31) % 32000);
  return { seqId: `s${round}`, tokenIds, cacheSalt: null, numEncoderPositions: 0 };
}

/** Microseconds per step: allocate and cache one new prompt (evicting an old one's blocks once the pool is full). */
function timeSteps(withEvents: boolean): { usPerStep: number; bytes: number; events: string } {
  const kv = new KvCacheManager(4 * Math.ceil(PROMPT / BLOCK), BLOCK, true);
  const recorder = new KvEventRecorder();
  if (withEvents) kv.events = recorder.sinkFor({ groupIdx: 0, blockSize: BLOCK, window: 0 });
  const writer = new MsgpackWriter();
  let bytes = 0;
  let events = '';
  const seqs = Array.from({ length: ROUNDS }, (_, r) => prompt(r));
  const started = process.hrtime.bigint();
  for (const seq of seqs) {
    kv.allocate(seq, 0, PROMPT);
    kv.cacheComputedBlocks(seq, PROMPT);
    kv.free(seq.seqId);
    const batch = recorder.take();
    if (batch) {
      const payload = encodeKvEventBatch(batch, writer);
      bytes = payload.length;
      events = batch.events.map((e) => (e.type === 'AllBlocksCleared' ? e.type : `${e.type}(${e.blockHashes.length})`)).join(' + ');
    }
  }
  const usPerStep = Number(process.hrtime.bigint() - started) / 1000 / ROUNDS;
  return { usPerStep, bytes, events };
}

for (let pass = 0; pass < 2; pass++) {
  const off = timeSteps(false);
  const on = timeSteps(true);
  if (pass === 0) continue; // warm-up
  console.log(`700-token prompt, block ${BLOCK}: steady-state batch ${on.bytes} bytes: ${on.events}`);
  console.log(`KV manager per step: ${off.usPerStep.toFixed(1)} us without events, ${on.usPerStep.toFixed(1)} us with events (recording + encoding): +${(on.usPerStep - off.usPerStep).toFixed(1)} us`);
}
