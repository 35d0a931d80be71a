// A server on stories260K with a few vocabulary entries turned into whole tool-call / thinking
// texts (test/helpers/forced-text-model.ts) and a Hermes-style (Qwen2.5 / Qwen3) chat template
// written for the tests: `logit_bias` on one of those tokens makes the model really write that
// markup, which the tool-call and reasoning parsers then take apart.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeForcedTextModel } from '../helpers/forced-text-model';
import { defaultTestModel, startServing, type Serving } from './completions-helpers';

/** Qwen2.5's tool format and Qwen3's thinking switch, in a few lines of Jinja. */
export const HERMES_TEMPLATE = [
  '{%- if tools %}{{ "<|im_start|>system\\n# Tools\\n<tools>" }}{% for tool in tools %}{{ "\\n" }}{{ tool | tojson }}{% endfor %}',
  '{{ "\\n</tools><|im_end|>\\n" }}{% endif %}',
  '{%- for message in messages %}',
  "{%- if message.role == 'assistant' and message.tool_calls %}{{ '<|im_start|>assistant' }}",
  '{%- for call in message.tool_calls %}{{ "\\n<tool_call>\\n" }}{"name": "{{ call.function.name }}", "arguments": {{ call.function.arguments | tojson }}}',
  '{{ "\\n</tool_call>" }}{% endfor %}{{ "<|im_end|>\\n" }}',
  "{%- elif message.role == 'tool' %}{{ '<|im_start|>user\\n<tool_response>\\n' + message.content + '\\n</tool_response><|im_end|>\\n' }}",
  "{%- else %}{{ '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{% endif %}",
  '{%- endfor %}',
  '{%- if add_generation_prompt %}{{ "<|im_start|>assistant\\n" }}',
  '{%- if enable_thinking is defined and enable_thinking is false %}{{ "<think>\\n\\n</think>\\n\\n" }}{% endif %}{% endif %}',
].join('');

export interface ForcedServing<K extends string> {
  serving: Serving;
  /** The token that writes each text. */
  tokenOf: Record<K, number>;
  /** The request field that makes the model write `text` once per generated token. */
  forcing(text: K): { logit_bias: Record<string, number> };
}

/** Starts the server (served as "forced") on a copy of the test model that can write `texts`. */
export async function startForcedServing<K extends string>(texts: Record<K, string>, flags: string[]): Promise<ForcedServing<K>> {
  const path = join(mkdtempSync(join(tmpdir(), 'ortllm-forced-')), 'forced-text.gguf');
  const keys = Object.keys(texts) as K[];
  const ids = await writeForcedTextModel(defaultTestModel(), path, keys.map((key) => texts[key]));
  const tokenOf = Object.fromEntries(keys.map((key, i) => [key, ids[i]])) as Record<K, number>;
  const serving = await startServing([...flags, '--served-model-name', 'forced'], { model: path }, HERMES_TEMPLATE);
  return { serving, tokenOf, forcing: (text) => ({ logit_bias: { [tokenOf[text]]: 100 } }) };
}
