// POST /score and /v1/score (sentence-transformers CrossEncoder style: text_1 against text_2,
// 1:1, 1:N or N:N) and /rerank, /v1/rerank, /v2/rerank (Jina / Cohere style: a query against
// documents, sorted by relevance_score). A cross-encoder scores each (query, document) pair in one
// forward; an embedding model embeds both sides and scores by cosine similarity, as vLLM does.

import { RequestValidationError } from '../../engine/errors';
import type { UsageInfo } from '../usage';
import { encodeAll } from './encode-all';
import { classProbabilities, cosineSimilarity } from './pooled-vectors';
import { contextTooLong, encodeText, encodeTexts, finish, type PoolingInputLimits, type PoolingPrompt } from './pooling-input';
import { PoolingServingBase, useActivation, type PoolingRequestCommon, type PoolingRequestContext } from './pooling-serving-base';

interface ScoringFields extends PoolingRequestCommon {
  truncate_prompt_tokens?: number | null;
  use_activation?: boolean | null;
  activation?: boolean | null;
  softmax?: boolean | null;
}

export interface ScoreRequestBody extends ScoringFields {
  text_1?: unknown;
  text_2?: unknown;
}

export interface RerankRequestBody extends ScoringFields {
  query?: unknown;
  documents?: unknown;
  /** 0 (default) = every document. */
  top_n?: number | null;
  /** Cohere's flag; vLLM's (Jina-style) answer always carries the documents, which stays the default. */
  return_documents?: boolean | null;
}

export interface ScoreData {
  index: number;
  object: 'score';
  score: number;
}

export interface ScoreResponse {
  id: string;
  object: 'list';
  created: number;
  model: string;
  data: ScoreData[];
  usage: UsageInfo;
}

export interface RerankResult {
  index: number;
  document?: { text: string };
  relevance_score: number;
}

export interface RerankResponse {
  id: string;
  model: string;
  usage: { prompt_tokens: number; total_tokens: number };
  results: RerankResult[];
}

export class ScoreServing extends PoolingServingBase {
  async score(body: ScoreRequestBody, idBase: string, signal?: AbortSignal): Promise<ScoreResponse> {
    const ctx = this.begin(body, idBase, 'score', ['embed', 'classify']);
    const scored = await this.scorePairs(ctx, texts(body.text_1, 'text_1'), texts(body.text_2, 'text_2'), body, 'text_2', signal);
    return {
      id: ctx.id,
      object: 'list',
      created: ctx.created,
      model: ctx.model,
      data: scored.scores.map((score, index) => ({ index, object: 'score', score })),
      usage: this.usage(scored.promptTokens),
    };
  }

  async rerank(body: RerankRequestBody, idBase: string, signal?: AbortSignal): Promise<RerankResponse> {
    const ctx = this.begin(body, idBase, 'rerank', ['embed', 'classify']);
    if (typeof body.query !== 'string') throw new RequestValidationError('query must be a string.', 'query');
    const documents = texts(body.documents, 'documents');
    const scored = await this.scorePairs(ctx, [body.query], documents, body, 'documents', signal);
    const withDocuments = body.return_documents ?? true;
    const results = scored.scores
      .map((relevance_score, index): RerankResult => ({ index, ...(withDocuments ? { document: { text: documents[index] } } : {}), relevance_score }))
      .sort((a, b) => b.relevance_score - a.relevance_score);
    const topN = body.top_n ?? 0;
    if (!Number.isInteger(topN) || topN < 0) throw new RequestValidationError('top_n must be a non-negative integer.', 'top_n');
    return {
      id: ctx.id,
      model: ctx.model,
      usage: { prompt_tokens: scored.promptTokens, total_tokens: scored.promptTokens },
      results: topN > 0 && topN < results.length ? results.slice(0, topN) : results,
    };
  }

  /** One score per pair (text_1 repeated when there is one), and the prompt tokens they took; `inputParam` names the many side. */
  private async scorePairs(
    ctx: PoolingRequestContext,
    left: string[],
    right: string[],
    body: ScoringFields,
    inputParam: string,
    signal?: AbortSignal,
  ): Promise<{ scores: number[]; promptTokens: number }> {
    if (left.length > 1 && left.length !== right.length) throw new RequestValidationError('Input lengths must be either 1:1, 1:N or N:N', 'text_2');
    const queries = left.length === 1 ? right.map(() => left[0]) : left;
    const limits = { trustRequestChatTemplate: false, maxTokens: this.engine.maxModelLen, tooLong: contextTooLong };
    const encodeOpts = { requestId: ctx.id, priority: ctx.priority, signal, inputParam };
    if (ctx.pooler.task === 'classify') {
      const prompts = await Promise.all(queries.map((q, i) => this.pairPrompt(q, right[i], body, limits, ctx.pooler.sentencePairs)));
      const outputs = await encodeAll(this.engine, prompts, encodeOpts);
      const activate = useActivation(body);
      return {
        scores: outputs.map((o) => classProbabilities(o.data, ctx.pooler.activation, activate)[0]),
        promptTokens: outputs.reduce((n, o) => n + o.promptTokenIds.length, 0),
      };
    }
    // Embedding model: every distinct text once, then cosine similarity of each pair.
    const all = [...left, ...right];
    const outputs = await encodeAll(
      this.engine,
      (await encodeTexts(this.engine, all, true, 'text_1')).map((ids) => finish(ids, null, 'text_1', body, this.engine, limits)),
      encodeOpts,
    );
    const leftOut = outputs.slice(0, left.length);
    const rightOut = outputs.slice(left.length);
    // vLLM counts each pair as text_1's tokens + a pad token (when the tokenizer has one) + text_2's.
    const pad = this.engine.tokenizer?.padTokenId != null ? 1 : 0;
    const pairLeft = (i: number) => leftOut[left.length === 1 ? 0 : i];
    return {
      scores: rightOut.map((r, i) => cosineSimilarity(pairLeft(i).data, r.data)),
      promptTokens: rightOut.reduce((n, r, i) => n + pairLeft(i).promptTokenIds.length + pad + r.promptTokenIds.length, 0),
    };
  }

  /** A cross-encoder's input: the tokenizer's sentence pair (with token types) or, for decoders, the texts joined. */
  private async pairPrompt(query: string, document: string, body: ScoringFields, limits: PoolingInputLimits, sentencePairs: boolean): Promise<PoolingPrompt> {
    const tokenizer = this.engine.tokenizer;
    if (sentencePairs && tokenizer?.encodePair) {
      const lower = this.engine.pooler?.lowerCaseInputs ? (s: string) => s.toLowerCase() : (s: string) => s;
      const pair = tokenizer.encodePair(lower(query), lower(document));
      return finish(pair.ids, pair.tokenTypeIds, 'text_1', body, this.engine, limits);
    }
    return finish(await encodeText(this.engine, query + document, true, 'text_1'), null, 'text_1', body, this.engine, limits);
  }
}

/** A score input side: one string or a non-empty list of strings (multimodal content is refused). */
function texts(value: unknown, param: string): string[] {
  const list = typeof value === 'string' ? [value] : value;
  if (!Array.isArray(list)) {
    if (value !== null && typeof value === 'object') throw new RequestValidationError('Multimodal score inputs are not supported by this server.', param);
    throw new RequestValidationError(`${param} must be a string or a list of strings.`, param);
  }
  if (list.length === 0) {
    throw new RequestValidationError(param === 'text_1' ? 'At least one text element must be given' : 'At least one text_pair element must be given', param);
  }
  if (!list.every((t) => typeof t === 'string')) throw new RequestValidationError(`${param} must be a string or a list of strings.`, param);
  return list;
}
