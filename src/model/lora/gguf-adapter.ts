// Reads a llama.cpp GGUF LoRA adapter (general.type = adapter, adapter.type = lora, as
// convert_lora_to_gguf.py writes it) into the stored A/B pairs. Tensors are blk.N.<base>.weight.lora_a
// (GGML [in, r], row-major A [r, in]) and .lora_b (GGML [r, out], B [out, r]); the scale is
// alpha / r, or 1 when alpha is 0 (llama-adapter.h). For families whose Q/K rows the converter
// interleaves for RoPE (llama), B's rows are un-permuted exactly as the base weights are.
import { architectureOf } from '../architectures/registry';
import { dequantize } from '../gguf/dequant';
import { readGgufFile, type GgufFile, type GgufTensor } from '../gguf/gguf-file';
import { GGML_TYPES, ggmlTypeName } from '../gguf/ggml-types';
import { reorderRopeRows } from '../gguf/rope-permute';
import { readFloatsAsF32, readFully, withFile } from '../read-fully';
import type { DecoderArchConfig } from '../types';
import { assembleLoraWeights, checkLoraRank, type AdapterScale, type StoredLoraPair } from './assemble-lora';
import { LoraLoadError, type LoraLimits, type LoraWeights } from './lora-weights';

const CANONICAL_LINEAR = /^model\.layers\.(\d+)\.(?:self_attn|mlp)\.(\w+)\.weight$/;

export async function loadGgufAdapter(path: string, base: DecoderArchConfig, limits: LoraLimits): Promise<LoraWeights> {
  let file: GgufFile;
  try {
    file = await readGgufFile(path);
  } catch (err) {
    throw new LoraLoadError((err as Error).message);
  }
  const scale = checkAdapterMetadata(file, base);
  checkLoraRank(scale.rank, limits, path);
  const stored = storedPairs(file, base);
  return assembleLoraWeights(stored, scale, base, limits, path);
}

function checkAdapterMetadata(file: GgufFile, base: DecoderArchConfig): AdapterScale {
  const meta = file.metadata;
  const type = meta['general.type'];
  if (type !== 'adapter') {
    throw new LoraLoadError(`${file.path}: not a LoRA adapter: general.type is ${type === undefined ? 'absent' : JSON.stringify(type)}, expected 'adapter' (is this a model file?)`);
  }
  if (meta['adapter.type'] !== 'lora') throw new LoraLoadError(`${file.path}: adapter.type is ${JSON.stringify(meta['adapter.type'])}, only 'lora' adapters are supported`);
  if (meta['adapter.alora_invocation_tokens'] !== undefined) throw new LoraLoadError(`${file.path}: activated LoRA (adapter.alora_invocation_tokens) is not supported`);
  const arch = String(meta['general.architecture']);
  const baseArchitectures = architectureOf(base).gguf?.architectures ?? [];
  if (!baseArchitectures.includes(arch)) {
    throw new LoraLoadError(`${file.path}: the adapter is for architecture '${arch}' but the base model is '${base.architecture}' (model arch and LoRA arch mismatch)`);
  }
  const alpha = meta['adapter.lora.alpha'] === undefined ? 0 : Number(meta['adapter.lora.alpha']);
  if (!Number.isFinite(alpha)) throw new LoraLoadError(`${file.path}: adapter.lora.alpha is not a number`);
  const first = file.tensors.find((t) => t.name.endsWith('.lora_a'));
  if (!first) throw new LoraLoadError(`${file.path}: the adapter has no LoRA weights (no .lora_a tensors)`);
  const rank = first.ggmlShape[1];
  return { rank, alpha, scaling: alpha === 0 ? 1 : alpha / rank };
}

function storedPairs(file: GgufFile, base: DecoderArchConfig): StoredLoraPair[] {
  const mapping = architectureOf(base).gguf!;
  const byBase = new Map<string, { a?: GgufTensor; b?: GgufTensor }>();
  for (const tensor of file.tensors) {
    const match = /^(.+)\.lora_([ab])$/.exec(tensor.name);
    if (!match) throw new LoraLoadError(`${file.path}: LoRA tensor '${tensor.name}' has unexpected suffix (expected .lora_a / .lora_b)`);
    const entry = byBase.get(match[1]) ?? {};
    entry[match[2] as 'a' | 'b'] = tensor;
    byBase.set(match[1], entry);
  }
  const pairs: StoredLoraPair[] = [];
  withFile(file.path, (fd) => {
    for (const [baseName, { a, b }] of byBase) {
      if (!a || !b) throw new LoraLoadError(`${file.path}: LoRA tensor pair for '${baseName}' is missing one component`);
      const canonical = canonicalName(baseName, file.path, mapping.tensorName.bind(mapping));
      const [, layer, module] = canonical.match;
      const bData = readAsF32(fd, b, file.path);
      const [rank, out] = b.ggmlShape;
      const heads = mapping.ropePermutedHeads(canonical.name, base);
      if (heads !== null) {
        if (out !== heads * base.headDim) throw new LoraLoadError(`${file.path}: ${b.name} has ${out} rows, the base model's ${module} has ${heads * base.headDim}`);
        reorderRopeRows(new Uint8Array(bData.buffer, bData.byteOffset, bData.byteLength), heads, base.headDim, rank * 4, 'to-hf');
      }
      pairs.push({ layer: Number(layer), module, a: readAsF32(fd, a, file.path), aShape: [...a.ggmlShape].reverse(), b: bData, bShape: [out, rank], name: baseName });
    }
  });
  return pairs;
}

function canonicalName(ggufName: string, path: string, tensorName: (name: string) => string | null): { name: string; match: RegExpExecArray } {
  if (/^(token_embd|output)\.weight$/.test(ggufName)) {
    throw new LoraLoadError(`${path}: ${ggufName} is adapted; LoRA on the embeddings or the LM head (vLLM's extra vocabulary) is not supported`);
  }
  if (/_exps\.weight$/.test(ggufName)) throw new LoraLoadError(`${path}: ${ggufName} adapts mixture-of-experts experts; LoRA on MoE experts is not supported`);
  let name: string | null;
  try {
    name = tensorName(ggufName);
  } catch {
    name = null;
  }
  const match = name === null ? null : CANONICAL_LINEAR.exec(name);
  if (name === null || !match) throw new LoraLoadError(`${path}: LoRA tensor '${ggufName}' does not adapt a linear of a decoder layer of the base model (hint: maybe wrong base model?)`);
  return { name, match };
}

function readAsF32(fd: number, tensor: GgufTensor, path: string): Float32Array {
  const info = GGML_TYPES.get(tensor.type);
  const count = tensor.ggmlShape.reduce((x, y) => x * y, 1);
  const what = `${path}: tensor ${tensor.name}`;
  if (tensor.ggmlShape.length !== 2) throw new LoraLoadError(`${what} has ${tensor.ggmlShape.length} dimensions, expected 2`);
  if (!info || info.name === 'MXFP4') throw new LoraLoadError(`${what} has type ${ggmlTypeName(tensor.type)}, which LoRA adapters cannot use (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)`);
  if (info.target === 'f32') return readFloatsAsF32(fd, { offset: tensor.offset, byteLength: tensor.byteLength, count, dtype: info.name as 'F32' | 'F16' | 'BF16' }, what);
  const raw = new Uint8Array(tensor.byteLength);
  readFully(fd, raw, tensor.offset, what);
  return dequantize(info.target, raw, count);
}
