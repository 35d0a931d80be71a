// vLLM's speculative decoding counters (SpecDecodingProm), registered only when the server runs
// with --speculative-config, as vLLM does.

import { Counter, type Registry } from 'prom-client';
import type { SpecDecodingStats } from '../../engine/types';

export class SpecDecodingMetrics {
  private readonly drafts: Counter<string>;
  private readonly draftTokens: Counter<string>;
  private readonly accepted: Counter<string>;
  private readonly acceptedPerPosition: Counter<string>;

  constructor(
    registry: Registry,
    private readonly labels: { model_name: string; engine: string },
    numSpeculativeTokens: number,
  ) {
    const labelNames = Object.keys(labels);
    const counter = (name: string, help: string, extra: string[] = []) => new Counter({ name, help, labelNames: [...labelNames, ...extra], registers: [registry] });
    this.drafts = counter('vllm:spec_decode_num_drafts_total', 'Number of spec decoding drafts.');
    this.draftTokens = counter('vllm:spec_decode_num_draft_tokens_total', 'Number of draft tokens.');
    this.accepted = counter('vllm:spec_decode_num_accepted_tokens_total', 'Number of accepted tokens.');
    this.acceptedPerPosition = counter('vllm:spec_decode_num_accepted_tokens_per_pos_total', 'Accepted tokens per draft position.', ['position']);
    for (const c of [this.drafts, this.draftTokens, this.accepted]) c.inc(labels, 0);
    for (let pos = 0; pos < numSpeculativeTokens; pos++) this.acceptedPerPosition.inc({ ...labels, position: String(pos) }, 0);
  }

  record(stats: SpecDecodingStats): void {
    if (stats.numDrafts === 0) return;
    this.drafts.inc(this.labels, stats.numDrafts);
    this.draftTokens.inc(this.labels, stats.numDraftTokens);
    this.accepted.inc(this.labels, stats.numAcceptedTokens);
    stats.acceptedPerPosition.forEach((n, pos) => {
      if (n > 0) this.acceptedPerPosition.inc({ ...this.labels, position: String(pos) }, n);
    });
  }
}
