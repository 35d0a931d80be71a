// The tool-call parsers `--tool-call-parser` can name (vLLM's names).

import { ParserRegistry } from '../parser-registry';
import { HermesToolParser } from './hermes';
import { Llama3JsonToolParser } from './llama3-json';
import { MistralToolParser } from './mistral';
import { Phi4MiniJsonToolParser } from './phi4-mini-json';
import { PythonicToolParser } from './pythonic';
import { Qwen3CoderToolParser } from './qwen3-coder';
import type { ToolParserFactory } from './types';

export const TOOL_PARSERS = new ParserRegistry<ToolParserFactory>('tool call parser');

TOOL_PARSERS.register('hermes', HermesToolParser);
TOOL_PARSERS.register(['llama3_json', 'llama4_json'], Llama3JsonToolParser);
TOOL_PARSERS.register('mistral', MistralToolParser);
TOOL_PARSERS.register('phi4_mini_json', Phi4MiniJsonToolParser);
TOOL_PARSERS.register('pythonic', PythonicToolParser);
TOOL_PARSERS.register('qwen3_coder', Qwen3CoderToolParser);
