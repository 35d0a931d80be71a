// Parsers of `ortllm serve` flag values with vLLM's choices and aliases; each throws a readable
// message for a value it refuses (commander prints it as the usage error).

import { isKvStorageDtype, type KvCacheDtypeFlag } from '../model/runner/kv-dtype';
import { parseInteger } from './units';
import type { ModelDtype, TokenizerMode } from './flag-values';

export const positiveInt = (text: string): number => {
  const n = parseInteger(text);
  if (n <= 0) throw new Error(`'${text}' must be a positive integer`);
  return n;
};

export const parseNonNegative = (text: string): number => {
  const n = Number(text);
  if (!Number.isFinite(n) || n < 0) throw new Error(`'${text}' must be a number >= 0`);
  return n;
};

/**
 * vLLM's --dtype choices. bfloat16 is taken here; the runner refuses it at startup where it has no
 * bfloat16 kernels (registry.ts: BFLOAT16_SCOPE).
 */
export function parseDtype(text: string): ModelDtype {
  const aliases: Record<string, ModelDtype> = { auto: 'auto', float: 'float32', float32: 'float32', half: 'float16', float16: 'float16', bfloat16: 'bfloat16' };
  const dtype = aliases[text];
  if (!dtype) throw new Error(`'${text}' is not one of auto, half, float16, bfloat16, float, float32`);
  return dtype;
}

/** vLLM's --tokenizer-mode values; the ones needing another tokenizer implementation are refused. */
export function parseTokenizerMode(text: string): TokenizerMode {
  if (text === 'auto' || text === 'hf' || text === 'slow') return text;
  if (['mistral', 'custom', 'deepseek_v32'].includes(text)) {
    throw new Error(`'${text}' needs vLLM's Python tokenizer (${text === 'mistral' ? 'mistral_common' : 'a plugin'}); ortllm reads tokenizer.json or the GGUF vocabulary: use auto`);
  }
  throw new Error(`'${text}' is not one of auto, hf, slow, mistral, custom, deepseek_v32`);
}

/**
 * vLLM's --kv-cache-dtype values (auto, bfloat16, fp8 = fp8_e4m3, fp8_e5m2), plus float16 and
 * float32 to pin a storage type whatever the model's; fp8_inc (Intel Gaudi) and fp8_ds_mla
 * (DeepSeek MLA's packed layout) are refused with the reason.
 */
export function parseKvCacheDtype(text: string): KvCacheDtypeFlag {
  if (text === 'auto' || text === 'fp8' || isKvStorageDtype(text)) return text;
  if (text === 'fp8_inc' || text === 'fp8_ds_mla') {
    throw new Error(
      `'${text}' is not supported: it is ${text === 'fp8_inc' ? "Intel Gaudi's (INC) fp8 cache" : "DeepSeek MLA's packed fp8 layout"}; use fp8 (= fp8_e4m3) or fp8_e5m2 for an 8-bit cache`,
    );
  }
  throw new Error(`'${text}' is not one of auto, bfloat16, float16, float32, fp8, fp8_e4m3, fp8_e5m2, fp8_inc, fp8_ds_mla`);
}

/** vLLM's --load-format values: the ones ortllm reads are auto; the others are refused with the reason. */
export function parseLoadFormat(text: string): 'auto' | 'dummy' {
  if (text === 'auto' || text === 'safetensors' || text === 'gguf') return 'auto';
  if (text === 'dummy') return 'dummy';
  throw new Error(`'${text}' is not supported: ortllm reads GGUF files, safetensors and ONNX exports (auto); convert the checkpoint to safetensors or GGUF`);
}

export const nonNegativeInt = (text: string): number => {
  const n = parseInteger(text);
  if (n < 0) throw new Error(`'${text}' must be >= 0`);
  return n;
};
