// Token-level stop conditions of one sequence, in vLLM v1's `check_stop` order:
// below min_tokens nothing stops it (except the context limit); then EOS (unless
// ignore_eos) → 'stop' with stop_reason null; a stop_token_ids hit (or another
// generation_config EOS id, unless ignore_eos) → 'stop' with stop_reason = the id;
// max_tokens / max_model_len → 'length'; a detected repetition → 'repetition'.

import type { FinishReason, SamplingParams } from '../types';
import { detectRepetition } from '../sampling/repetition';

export interface FinishStatus {
  finishReason: FinishReason;
  /** The stop string or stop token id; null for EOS, length and abort. */
  stopReason: string | number | null;
}

/** vLLM's stop_reason for repetition finishes. */
const REPETITION_STOP_REASON = 'repetition_detected';

export interface StopCheckerInit {
  params: SamplingParams;
  /** First id = the tokenizer's EOS; the rest (generation_config) act as stop ids unless ignore_eos. */
  eosTokenIds: readonly number[];
  promptLength: number;
  /** Output budget: params.max_tokens, or what the context leaves when it is null. */
  maxTokens: number;
  maxModelLen: number;
}

export class StopChecker {
  private readonly eos: number | null;
  private readonly stopIds: Set<number>;

  constructor(private readonly init: StopCheckerInit) {
    const { params, eosTokenIds } = init;
    this.eos = params.ignore_eos || eosTokenIds.length === 0 ? null : eosTokenIds[0];
    this.stopIds = new Set(params.stop_token_ids);
    if (!params.ignore_eos) for (const id of eosTokenIds.slice(1)) this.stopIds.add(id);
  }

  /** Checks the sequence after `outputTokenIds` got its newest token. */
  check(outputTokenIds: readonly number[]): FinishStatus | null {
    const { params, promptLength, maxTokens, maxModelLen } = this.init;
    const numOutput = outputTokenIds.length;
    const atContextLimit = promptLength + numOutput >= maxModelLen;
    if (numOutput < params.min_tokens) {
      return atContextLimit ? { finishReason: 'length', stopReason: null } : null;
    }
    const last = outputTokenIds[numOutput - 1];
    if (last === this.eos) return { finishReason: 'stop', stopReason: null };
    if (this.stopIds.has(last)) return { finishReason: 'stop', stopReason: last };
    if (atContextLimit || numOutput >= maxTokens) return { finishReason: 'length', stopReason: null };
    if (params.repetition_detection && detectRepetition(outputTokenIds, params.repetition_detection)) {
      return { finishReason: 'repetition', stopReason: REPETITION_STOP_REASON };
    }
    return null;
  }
}
