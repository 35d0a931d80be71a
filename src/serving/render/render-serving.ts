// Render: a normal completion / chat request in, the GenerateRequest(s) a tokens-only worker
// takes out (token ids, the resolved engine SamplingParams, request id, …). The request is
// validated and mapped exactly as /v1/completions and /v1/chat/completions do (the serving
// classes' prepare()), so render → generate → derender reproduces a single server's answer.

import { RequestValidationError } from '../../engine/errors';
import type { EngineClient, EngineRequest } from '../../engine/types';
import { ChatServing, type ChatRequestBody, type PreparedChat } from '../chat-serving';
import { renderChats } from '../chat-prompt';
import { CompletionServing, type CompletionRequestBody } from '../completion-serving';
import type { ServingOptions } from '../serving-options';
import type { GenerateRequest } from '../generate/generate-types';
import { assistantTokensMask, extractGenerationSpans, hasGenerationTags, markGenerationTags } from './generation-spans';
import { tokenOffsets } from './token-offsets';

/** A GenerateRequest as render returns it (plus the chat-only assistant_tokens_mask). */
export type RenderedGenerateRequest = GenerateRequest & { assistant_tokens_mask?: number[] | null };

/** /v1/completions/render: the completion request plus the render-only options. */
export interface RenderCompletionRequest extends CompletionRequestBody {
  return_token_offsets?: boolean | null;
}

/** /v1/chat/completions/render: the chat request plus the render-only options. */
export interface RenderChatRequest extends ChatRequestBody {
  return_token_offsets?: boolean | null;
  return_assistant_tokens_mask?: boolean | null;
}

interface RenderSource {
  model?: string | null;
  stream?: boolean | null;
  stream_options?: GenerateRequest['stream_options'];
  kv_transfer_params?: Record<string, unknown> | null;
  use_beam_search?: boolean | null;
}

function rejectBeamSearch(body: RenderSource): void {
  if (body.use_beam_search) {
    throw new RequestValidationError('Beam search is not supported by the render endpoint', 'use_beam_search');
  }
}

function checkRendered(tokenIds: readonly number[]): void {
  if (tokenIds.length === 0) throw new RequestValidationError('No token_ids rendered', 'prompt');
}

export class RenderServing {
  private readonly completions: CompletionServing;
  private readonly chats: ChatServing;

  constructor(
    private readonly engine: EngineClient,
    opts: ServingOptions,
  ) {
    this.completions = new CompletionServing(engine, opts);
    this.chats = new ChatServing(engine, opts);
  }

  /** One GenerateRequest per prompt. */
  async renderCompletion(body: RenderCompletionRequest, idBase: string): Promise<RenderedGenerateRequest[]> {
    rejectBeamSearch(body);
    const prepared = await this.completions.prepare(body, idBase);
    return prepared.prompts.map((prompt, i) => {
      checkRendered(prompt.tokenIds);
      const offsets =
        body.return_token_offsets && prompt.text !== null && body.truncate_prompt_tokens == null && this.engine.tokenizer
          ? tokenOffsets(this.engine.tokenizer, prompt.text, prompt.tokenIds)
          : null;
      return this.generateRequest(body, prepared.engineRequests[i], offsets);
    });
  }

  /** One GenerateRequest for the conversation. */
  async renderChat(body: RenderChatRequest, idBase: string): Promise<RenderedGenerateRequest> {
    rejectBeamSearch(body);
    const prepared = await this.chats.prepare(body, idBase);
    // A GenerateRequest carries token ids only: the images would be lost on the way to /generate.
    if (prepared.engineRequests[0].multiModal) throw new RequestValidationError('Image inputs cannot be rendered into a GenerateRequest here (it carries token ids only).', 'messages');
    const prompt = prepared.prompts[0];
    checkRendered(prompt.tokenIds);
    const tokenizer = this.engine.tokenizer;
    // Offsets index the rendered text; a truncated prompt no longer starts where the text does.
    const text = body.truncate_prompt_tokens == null ? prompt.text : null;
    const offsets = (body.return_token_offsets || body.return_assistant_tokens_mask) && text !== null && tokenizer
      ? tokenOffsets(tokenizer, text, prompt.tokenIds)
      : null;
    const rendered = { ...this.generateRequest(body, prepared.engineRequests[0], body.return_token_offsets ? offsets : null), ...this.chats.reasoningState(prepared) };
    if (body.return_assistant_tokens_mask) {
      rendered.assistant_tokens_mask = offsets && text !== null ? await this.assistantMask(body, prepared, text, offsets) : null;
    }
    return rendered;
  }

  private generateRequest(
    body: RenderSource & { cache_salt?: string | null; priority?: number | null },
    request: EngineRequest,
    offsets: [number, number][] | null,
  ): RenderedGenerateRequest {
    const stream = body.stream === true;
    return {
      request_id: request.requestId,
      token_ids: request.promptTokenIds,
      token_offsets: offsets,
      features: null,
      content_parts: null,
      sampling_params: { ...request.params },
      model: body.model ?? null,
      reasoning_ended: null,
      reasoning_parser_kwargs: null,
      return_token_ids: null,
      output_mode: 'tokens',
      stream,
      stream_options: stream ? (body.stream_options ?? null) : null,
      cache_salt: body.cache_salt ?? null,
      priority: body.priority ?? 0,
      kv_transfer_params: body.kv_transfer_params ?? null,
      ec_transfer_params: null,
    };
  }

  /**
   * Renders the conversation once more with the generation tags turned into markers, and marks
   * the tokens inside them. Null when the template has no generation tags.
   */
  private async assistantMask(
    body: RenderChatRequest,
    prepared: PreparedChat,
    text: string,
    offsets: [number, number][],
  ): Promise<number[] | null> {
    const source = body.chat_template ?? this.engine.chatTemplate?.sourceFor(prepared.renderOptions) ?? null;
    if (!source || !hasGenerationTags(source)) return null;
    const [{ text: marked }] = await renderChats(
      this.engine.text,
      this.engine.chatTemplate !== null,
      [prepared.conversations[0]],
      { ...prepared.renderOptions, chatTemplate: markGenerationTags(source) },
      null,
    );
    const { text: clean, spans } = extractGenerationSpans(marked);
    // The markers must be the only difference; anything else means the spans cannot be trusted.
    if (clean !== text) return null;
    return assistantTokensMask(offsets, spans);
  }
}
