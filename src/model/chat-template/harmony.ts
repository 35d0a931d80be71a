// gpt-oss's harmony chat format, rendered as vLLM renders it through openai_harmony (not the
// model's Jinja template): a system message (identity, knowledge cutoff, date, `Reasoning:`
// effort, valid channels), a developer message with the request's system/developer text as
// `# Instructions` and its function tools as a TypeScript namespace, then the conversation, each
// message `<|start|>author[ to=recipient][<|channel|>channel][ <|constrain|>json]<|message|>text<|end|>`.
// The generation prompt is `<|start|>assistant`. chat_template_kwargs: reasoning_effort,
// model_identity, conversation_start_date (default today, UTC, as vLLM).

import type { ChatMessage, ChatRenderOptions, ChatTemplate, Tokenizer } from '../types';
import { ChatTemplateError } from './errors';
import { functionsNamespace, type HarmonyFunction } from './harmony-tools';

const DEFAULT_IDENTITY = 'You are ChatGPT, a large language model trained by OpenAI.';
const KNOWLEDGE_CUTOFF = '2024-06';
const EFFORTS = new Set(['low', 'medium', 'high']);

/** The special tokens of the o200k_harmony vocabulary the format is written in. */
export const HARMONY_MARKERS = ['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|call|>', '<|return|>'] as const;

type Json = Record<string, unknown>;

function contentText(content: ChatMessage['content']): string {
  if (content == null) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => (typeof part.text === 'string' ? part.text : '')).join('');
}

function stringKwarg(kwargs: Json, key: string): string | null {
  const value = kwargs[key];
  return typeof value === 'string' && value !== '' ? value : null;
}

function message(author: string, text: string, opts: { recipient?: string; channel?: string; json?: boolean; end?: string } = {}): string {
  const to = opts.recipient ? ` to=${opts.recipient}` : '';
  const channel = opts.channel ? `<|channel|>${opts.channel}` : '';
  const constrain = opts.json ? ' <|constrain|>json' : '';
  return `<|start|>${author}${to}${channel}${constrain}<|message|>${text}${opts.end ?? '<|end|>'}`;
}

function requestFunctions(tools: unknown[] | null | undefined): HarmonyFunction[] {
  const out: HarmonyFunction[] = [];
  for (const tool of tools ?? []) {
    const t = tool as Json;
    if (t.type !== 'function') continue;
    const fn = (t.function ?? t) as Json;
    if (typeof fn.name !== 'string') continue;
    const parameters = fn.parameters && typeof fn.parameters === 'object' ? fn.parameters as Json : null;
    out.push({ name: fn.name, description: typeof fn.description === 'string' ? fn.description : '', parameters });
  }
  return out;
}

function systemMessage(kwargs: Json, hasFunctions: boolean): string {
  const effort = stringKwarg(kwargs, 'reasoning_effort') ?? 'medium';
  if (!EFFORTS.has(effort)) throw new ChatTemplateError(`reasoning_effort '${effort}' is not one of low, medium, high for this model`);
  const date = stringKwarg(kwargs, 'conversation_start_date') ?? new Date().toISOString().slice(0, 10);
  const top = [stringKwarg(kwargs, 'model_identity') ?? DEFAULT_IDENTITY, `Knowledge cutoff: ${KNOWLEDGE_CUTOFF}`, `Current date: ${date}`];
  const channels = hasFunctions
    ? "# Valid channels: analysis, commentary, final. Channel must be included for every message.\nCalls to these tools must go to the commentary channel: 'functions'."
    : '# Valid channels: analysis, final. Channel must be included for every message.';
  return message('system', [top.join('\n'), `Reasoning: ${effort}`, channels].join('\n\n'));
}

function developerMessage(instructions: string[], functions: HarmonyFunction[]): string {
  const sections: string[] = [];
  if (instructions.length > 0) sections.push('# Instructions', instructions.join('\n\n'));
  if (functions.length > 0) sections.push(functionsNamespace(functions));
  return sections.length > 0 ? message('developer', sections.join('\n\n')) : '';
}

interface ToolCallJson {
  id?: string;
  function?: { name?: string; arguments?: string };
}

/** The conversation after the system/developer preamble. */
function conversation(messages: ChatMessage[]): string {
  // Thinking is kept only for the turn in progress (after the last user message), as harmony drops it from finished turns.
  let lastUser = -1;
  messages.forEach((m, i) => { if (m.role === 'user') lastUser = i; });
  const callNames = new Map<string, string>();
  let out = '';
  messages.forEach((m, i) => {
    const text = contentText(m.content);
    switch (m.role) {
      case 'system':
      case 'developer':
        return;
      case 'user':
        out += message('user', text);
        return;
      case 'assistant': {
        const reasoning = typeof m.reasoning === 'string' ? m.reasoning : typeof m.reasoning_content === 'string' ? m.reasoning_content : '';
        if (reasoning !== '' && i > lastUser) out += message('assistant', reasoning, { channel: 'analysis' });
        if (text !== '') out += message('assistant', text, { channel: 'final' });
        for (const call of (m.tool_calls as ToolCallJson[] | undefined) ?? []) {
          const name = call.function?.name ?? '';
          if (call.id) callNames.set(call.id, name);
          out += message('assistant', call.function?.arguments ?? '',
            { recipient: `functions.${name}`, channel: 'commentary', json: true, end: '<|call|>' });
        }
        return;
      }
      case 'tool': {
        const name = (typeof m.tool_call_id === 'string' ? callNames.get(m.tool_call_id) : undefined)
          ?? (typeof m.name === 'string' ? m.name : '');
        out += message(`functions.${name}`, text, { recipient: 'assistant', channel: 'commentary' });
        return;
      }
      default:
        throw new ChatTemplateError(`role '${m.role}' is not part of the harmony format (system, developer, user, assistant, tool)`);
    }
  });
  return out;
}

class HarmonyChatTemplate implements ChatTemplate {
  render(messages: ChatMessage[], opts: ChatRenderOptions): string {
    if (opts.template) throw new ChatTemplateError('this model renders the harmony format; a request chat_template does not apply');
    if (opts.continueFinalMessage) throw new ChatTemplateError('continue_final_message is not supported with the harmony format');
    const kwargs = opts.extraKwargs ?? {};
    const functions = requestFunctions(opts.tools);
    const instructions = messages.filter((m) => m.role === 'system' || m.role === 'developer').map((m) => contentText(m.content));
    const prompt = systemMessage(kwargs, functions.length > 0) + developerMessage(instructions, functions) + conversation(messages);
    return opts.addGenerationPrompt ? `${prompt}<|start|>assistant` : prompt;
  }

  sourceFor(): string | null {
    return null;
  }
}

export function createHarmonyChatTemplate(): ChatTemplate {
  return new HarmonyChatTemplate();
}

/** True when every harmony marker is one token of the vocabulary (o200k_harmony: gpt-oss). */
export function isHarmonyVocabulary(tokenizer: Pick<Tokenizer, 'encode' | 'idToToken'>): boolean {
  return HARMONY_MARKERS.every((marker) => {
    const ids = tokenizer.encode(marker, { addSpecialTokens: false });
    return ids.length === 1 && tokenizer.idToToken(ids[0]) === marker;
  });
}
