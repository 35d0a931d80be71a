// Detokenization and stop handling for the engine core (plain TypeScript).
//
// How the core uses it, per sequence (n > 1: one per child):
//   const out = new SequenceOutputProcessor({ params, tokenizer, promptTokenIds, eosTokenIds,
//       maxTokens: params.max_tokens ?? maxModelLen - promptTokenIds.length, maxModelLen });
//   each step, after SequenceSampler.sample():
//       const status = out.appendToken(tokenId);   // FinishStatus | null
//       if (status) → finish the sequence: finishReason 'stop' | 'length' | 'repetition',
//                     stopReason = stop string, stop token id, or null (EOS / length)
//   when building a RequestOutput (every step unless FINAL_ONLY, and once at the end):
//       text = out.nextText(params.output_kind === OUTPUT_KIND.DELTA)
//     (holds back a partial stop string while running; flushes everything once finished)
//   abort / error from outside: out.finish('abort') then out.nextText(...) for the last text.
// tokenIds keep every sampled token (a stop token too); the text drops a stop token's
// text and cuts a matched stop string unless include_stop_str_in_output.

export { SequenceOutputProcessor } from './sequence-output';
export { type FinishStatus } from './stop-checker';
export { IncrementalDetokenizer } from './incremental-detokenizer';
export { findStopString, safeCut } from './stop-strings';
