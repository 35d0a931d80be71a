// The reasoning parsers `--reasoning-parser` can name (vLLM's names).

import { ParserRegistry } from '../parser-registry';
import { GptOssReasoningParser } from './gpt-oss';
import { DeepSeekR1ReasoningParser, Qwen3ReasoningParser } from './think-tag-parser';
import type { ReasoningParserFactory } from './types';

export const REASONING_PARSERS = new ParserRegistry<ReasoningParserFactory>('reasoning parser');

REASONING_PARSERS.register('deepseek_r1', DeepSeekR1ReasoningParser);
REASONING_PARSERS.register('qwen3', Qwen3ReasoningParser);
REASONING_PARSERS.register('openai_gptoss', GptOssReasoningParser);
