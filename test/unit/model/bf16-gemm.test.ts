/** @jest-environment ./test/helpers/ort-environment.js */
// The addon's AVX512-BF16 GEMM and add + LayerNorm (native/src/bf16-gemm.cc) and encoder attention
// (native/src/bf16-encoder-attention.cc) against float64 references written here over the
// bfloat16-rounded operands, and --dtype bfloat16 pooling
// (runner/bf16-pooling-runner.ts) against the float32 runner and the float64 reference forward on
// random BERT / XLM-RoBERTa checkpoints.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../../../src/model/load-model';
import { BF16_ACTIVATION, nativeKernels } from '../../../src/model/runner/native-kernels';
import { createPoolingRunner } from '../../../src/model/runner/pooling-runner';
import type { EncodeSequence, LoadedModel } from '../../../src/model/types';
import { cosine, referenceClassifierLogits, referenceEncoderStates, referencePool, writeEncoderDir, type TestEncoder } from '../../helpers/encoder-model';
import { loadOptions } from '../../helpers/model-files';

const native = nativeKernels();
const bf16 = native?.bf16Available === true;
if (!bf16) console.warn('\n*** SKIPPING the bfloat16 GEMM tests: the addon is not built or this CPU has no AVX512-BF16 ***\n');
const bf16Describe = bf16 ? describe : describe.skip;
const reason = bf16 ? '' : ' [skipped: no addon or no AVX512-BF16]';

function seeded(n: number, seed: number, scale = 1): Float32Array {
  let s = seed >>> 0 || 1;
  return Float32Array.from({ length: n }, () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return ((s / 2 ** 32) * 2 - 1) * scale;
  });
}

const word = new Float32Array(1);
const bits = new Uint32Array(word.buffer);
/** x rounded to bfloat16 (the top 16 bits of its float32), to nearest with ties to even. */
function toBf16(x: number): number {
  word[0] = x;
  const u = bits[0];
  bits[0] = ((u + 0x7fff + ((u >>> 16) & 1)) & 0xffff0000) >>> 0;
  return word[0];
}

/** erf by its Taylor series (float64; |x| < 5, beyond which erf is ±1 to 1e-12). */
function erf(x: number): number {
  if (Math.abs(x) >= 5) return Math.sign(x);
  let term = x;
  let sum = x;
  for (let n = 1; n < 200; n++) {
    term *= (-x * x) / n;
    sum += term / (2 * n + 1);
  }
  return (2 / Math.sqrt(Math.PI)) * sum;
}

const ACTIVATIONS: Record<keyof typeof BF16_ACTIVATION, (v: number) => number> = {
  none: (v) => v,
  gelu: (v) => 0.5 * v * (1 + erf(v / Math.SQRT2)),
  gelu_tanh: (v) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3))),
  relu: (v) => Math.max(v, 0),
};

bf16Describe(`bf16Gemm${reason}`, () => {
  it.each([
    [1, 32, 32, 'none', true],
    [5, 96, 32, 'gelu', true],
    [16, 384, 384, 'none', true],
    [7, 50, 33, 'relu', false], // n not a multiple of 16, k odd, no bias
    [3, 1536, 384, 'gelu', true],
    [13, 384, 1536, 'gelu_tanh', true],
    [70, 384, 1024, 'none', true], // enough work for the thread pool (m n k >= 2e7), rows past one 64-row chunk
  ] as const)('m %i, n %i, k %i, %s (bias %s): float32 sums of the bfloat16-rounded operands', (m, n, k, act, withBias) => {
    native!.setThreads(2);
    const w = seeded(n * k, n * 7 + k, 0.2);
    const x = seeded(m * k, m * 13 + k, 2);
    const bias = withBias ? seeded(n, n + 1, 0.5) : null;
    const y = new Float32Array(m * n);
    native!.bf16Gemm(native!.bf16Pack(w, n, k), x, bias, y, m, n, k, BF16_ACTIVATION[act]);
    const wr = Float64Array.from(w, toBf16);
    const xr = Float64Array.from(x, toBf16);
    let worst = 0;
    for (let r = 0; r < m; r++) {
      for (let c = 0; c < n; c++) {
        let sum = bias ? bias[c] : 0;
        let magnitude = Math.abs(sum);
        for (let i = 0; i < k; i++) {
          const p = xr[r * k + i] * wr[c * k + i];
          sum += p;
          magnitude += Math.abs(p);
        }
        // float32 accumulation of k exact products (bf16 x bf16 fits a float32): a few ulps of the
        // terms' magnitude; GELU's polynomials add ~2e-7 of the value.
        const err = Math.abs(y[r * n + c] - ACTIVATIONS[act](sum));
        worst = Math.max(worst, err / (1e-6 * magnitude + 1e-6 * Math.abs(sum) + 1e-7));
      }
    }
    expect(worst).toBeLessThan(1);
  });

  it('rounds to nearest even: the float32 operands are not used unrounded', () => {
    // 1 + 2^-8 is halfway between bfloat16 1 and 1 + 2^-7: ties to even gives 1; 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
    const w = Float32Array.from([1 + 2 ** -8, 1 + 3 * 2 ** -8]);
    const y = new Float32Array(2);
    native!.bf16Gemm(native!.bf16Pack(w, 2, 1), Float32Array.of(1 + 2 ** -8), null, y, 1, 2, 1, BF16_ACTIVATION.none);
    expect(Array.from(y)).toEqual([1, 1 + 2 ** -6]);
  });

  it('refuses arguments that do not match', () => {
    const packed = native!.bf16Pack(new Float32Array(32 * 16), 16, 32);
    expect(() => native!.bf16Gemm(packed, new Float32Array(32), null, new Float32Array(16), 1, 16, 30, 0)).toThrow(/packed does not match n, k/);
    expect(() => native!.bf16Gemm(packed, new Float32Array(31), null, new Float32Array(16), 1, 16, 32, 0)).toThrow(/x must be/);
    expect(() => native!.bf16Gemm(packed, new Float32Array(32), new Float32Array(3), new Float32Array(16), 1, 16, 32, 0)).toThrow(/bias must be/);
    expect(() => native!.bf16Gemm(packed, new Float32Array(32), null, new Float32Array(16), 1, 16, 32, 9)).toThrow(/bad m, n, k or act/);
    expect(() => native!.bf16Pack(new Float32Array(5), 2, 3)).toThrow(/w must be a Float32Array of n \* k/);
  });
});

bf16Describe(`addLayerNorm${reason}`, () => {
  it('LayerNorm(x + residual) * gamma + beta per row, in place of the residual', () => {
    const h = 40; // not a multiple of 16
    const rows = 3;
    const x = seeded(rows * h, 1, 3);
    const residual = seeded(rows * h, 2, 1);
    const gamma = seeded(h, 3, 1);
    const beta = seeded(h, 4, 0.5);
    const expected = new Float64Array(rows * h);
    for (let r = 0; r < rows; r++) {
      const v = Array.from({ length: h }, (_, j) => x[r * h + j] + residual[r * h + j]);
      const mean = v.reduce((a, b) => a + b, 0) / h;
      const variance = v.reduce((a, b) => a + (b - mean) ** 2, 0) / h;
      v.forEach((value, j) => (expected[r * h + j] = ((value - mean) / Math.sqrt(variance + 1e-12)) * gamma[j] + beta[j]));
    }
    native!.addLayerNorm(x, residual, gamma, beta, residual, 1e-12);
    residual.forEach((v, i) => expect(Math.abs(v - expected[i])).toBeLessThan(1e-5));
    expect(() => native!.addLayerNorm(x, new Float32Array(3), gamma, beta, residual, 1e-12)).toThrow(/rows of gamma/);
  });
});

bf16Describe(`bf16EncoderAttention${reason}`, () => {
  /**
   * softmax(q k^T * scale) v per sequence and head over the sequence's own keys, in float64 over the
   * bfloat16-rounded q, k, v and with the probabilities rounded to bfloat16 as the kernel rounds them.
   */
  function reference(qkv: Float32Array, lengths: number[], seq: number, heads: number, hidden: number, scale: number): Float64Array {
    const d = hidden / heads;
    const out = new Float64Array(lengths.length * seq * hidden);
    const rounded = Float64Array.from(qkv, toBf16);
    const at = (b: number, pos: number, part: number, head: number, i: number) => rounded[(b * seq + pos) * 3 * hidden + part * hidden + head * d + i];
    lengths.forEach((L, b) => {
      for (let head = 0; head < heads; head++) {
        for (let r = 0; r < L; r++) {
          const scores = Array.from({ length: L }, (_, j) => {
            let dot = 0;
            for (let i = 0; i < d; i++) dot += at(b, r, 0, head, i) * at(b, j, 1, head, i);
            return dot * scale;
          });
          const max = Math.max(...scores);
          const e = scores.map((v) => Math.exp(v - max));
          const sum = e.reduce((a, v) => a + v, 0);
          const p = e.map((v) => toBf16(v / sum));
          for (let i = 0; i < d; i++) {
            let acc = 0;
            for (let j = 0; j < L; j++) acc += p[j] * at(b, j, 2, head, i);
            out[(b * seq + r) * hidden + head * d + i] = acc;
          }
        }
      }
    });
    return out;
  }

  it.each([
    [[1, 17, 5, 40], 40, 3, 60], // head dim 20: a part-filled column group; lengths odd, 1, past 16
    [[9, 4], 12, 2, 66], // head dim 33: odd, padded to even
    [[128, 100, 77], 128, 6, 384], // enough work for the thread pool (2 sum(L^2) hidden >= 2e7), head dim 64
  ])('lengths %j of %i positions, %i heads, hidden %i: each sequence attends over its own keys', (lengths, seq, heads, hidden) => {
    native!.setThreads(2);
    const rows = lengths.length * seq;
    const qkv = seeded(rows * 3 * hidden, hidden + seq, 2);
    const context = new Float32Array(rows * hidden).fill(Number.NaN);
    const scale = 1 / Math.sqrt(hidden / heads);
    native!.bf16EncoderAttention(qkv, Int32Array.from(lengths), context, seq, heads, scale);
    const expected = reference(qkv, lengths, seq, heads, hidden, scale);
    let worst = 0;
    lengths.forEach((L, b) => {
      for (let r = 0; r < seq; r++) {
        for (let c = 0; c < hidden; c++) {
          const i = (b * seq + r) * hidden + c;
          // Padded rows are zeros, never NaN: the linears and LayerNorms after run over them.
          if (r >= L) expect(context[i]).toBe(0);
          // float32 softmax and sums against float64: ~1e-7 of the values (|v| <= 2); a probability
          // whose float32 value rounds to the other bfloat16 neighbour moves a term by 2^-8 of itself
          // (2.4e-4 at most over these cases; a wrong mask, scale or head is off by ~0.1).
          else worst = Math.max(worst, Math.abs(context[i] - expected[i]));
        }
      }
    });
    expect(worst).toBeLessThan(1e-3);
  });

  it('refuses arguments that do not match', () => {
    const ok = () => [new Float32Array(2 * 4 * 24), Int32Array.of(4, 2), new Float32Array(2 * 4 * 8)] as const;
    const [qkv, lengths, context] = ok();
    expect(() => native!.bf16EncoderAttention(qkv, lengths, context, 4, 2, 0.5)).not.toThrow();
    expect(() => native!.bf16EncoderAttention(qkv.subarray(1), lengths, context, 4, 2, 0.5)).toThrow(/qkv must be/);
    expect(() => native!.bf16EncoderAttention(qkv, Int32Array.of(5, 2), context, 4, 2, 0.5)).toThrow(/lengths must lie in 0..seq/);
    expect(() => native!.bf16EncoderAttention(qkv, lengths, context, 4, 3, 0.5)).toThrow(/multiple of heads/);
    expect(() => native!.bf16EncoderAttention(qkv, lengths, context.subarray(1), 4, 2, 0.5)).toThrow(/context must be/);
  });
});

// Pooling with --dtype bfloat16 against the float32 runner on the same checkpoint. bfloat16 keeps 8
// significant bits (each weight and activation within 2^-9 = 0.2% of itself); sums over the
// hidden size average those errors, so each layer's outputs move by ~0.1-0.3% and the pooled
// vector's cosine to the float32 one stays within a few 1e-6 of 1 (measured: 1 - 4e-6 at worst on
// these models, 1 - 1e-6 on the 6-layer bench model; the float32 runner is 1 - 3e-14 from the
// float64 reference). 1 - 1e-4 leaves a 25x margin over the rounding, while a wrong bias, weight
// layout or layer order moves these random models' outputs far past it.
const COSINE = 1 - 1e-4;
const SHAPE = { hidden: 64, layers: 2, heads: 4, intermediate: 128, maxPositions: 64 };

bf16Describe(`--dtype bfloat16 pooling${reason}`, () => {
  let tmp: string;
  beforeAll(() => (tmp = mkdtempSync(join(tmpdir(), 'ortllm-bf16-'))));
  afterAll(() => rmSync(tmp, { recursive: true, force: true }));

  async function bothRunners(model: LoadedModel, batch: EncodeSequence[]): Promise<[Float32Array[], Float32Array[]]> {
    const f32 = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 2 });
    const b16 = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 2, dtype: 'bfloat16' });
    try {
      return [await f32.encode(batch), await b16.encode(batch)];
    } finally {
      await Promise.all([f32.dispose(), b16.dispose()]);
    }
  }

  const sequences = (count: number, vocab: number): EncodeSequence[] =>
    Array.from({ length: count }, (_, i) => ({ tokens: Array.from({ length: 2 + ((i * 7) % 23) }, (_, j) => 3 + ((i * 131 + j * 17) % (vocab - 3))) }));

  it.each([
    ['bert', 'gelu', 'MEAN'],
    ['bert', 'gelu_new', 'CLS'],
    ['bert', 'relu', 'MEAN'],
    ['xlm-roberta', 'gelu', 'CLS'],
  ] as const)('%s embedder (%s, %s pooling): cosine to float32 and to the float64 reference >= 1 - 1e-4, padded batches alike', async (family, hiddenAct, pooling) => {
    const spec: TestEncoder = { family, numLabels: null, ...SHAPE, hiddenAct, layerNormEps: 1e-5 };
    const written = writeEncoderDir(join(tmp, `${family}-${hiddenAct}`), spec, 51, { pooling: pooling === 'MEAN' ? 'mean' : 'cls', normalize: true });
    const model = await loadModel(loadOptions(written.dir));
    const batch = sequences(9, written.vocabSize);
    const [f32, b16] = await bothRunners(model, batch);
    batch.forEach((s, i) => {
      expect(cosine(b16[i], f32[i])).toBeGreaterThan(COSINE);
      expect(cosine(b16[i], referencePool(referenceEncoderStates(written, s.tokens), pooling))).toBeGreaterThan(COSINE);
    });
  });

  it('the activation buffers a runner keeps between runs carry nothing over: a short input after long, padded runs pools as it does on a fresh runner', async () => {
    const written = writeEncoderDir(join(tmp, 'bert-reuse'), { family: 'bert', numLabels: null, ...SHAPE, hiddenAct: 'gelu', layerNormEps: 1e-5 }, 53, { pooling: 'mean', normalize: true });
    const model = await loadModel(loadOptions(written.dir));
    const short = sequences(1, written.vocabSize);
    const fresh = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 2, dtype: 'bfloat16' });
    const reused = await createPoolingRunner(model, { device: 'cpu', intraOpThreads: 2, dtype: 'bfloat16' });
    try {
      const [alone] = await fresh.encode(short);
      await reused.encode(sequences(12, written.vocabSize));
      const [after] = await reused.encode(short);
      expect(Array.from(after)).toEqual(Array.from(alone));
    } finally {
      await Promise.all([fresh.dispose(), reused.dispose()]);
    }
  });

  it('BERT cross-encoder: sentence pairs (token types) through the float32 head give the float32 logits within bfloat16 rounding', async () => {
    const written = writeEncoderDir(join(tmp, 'bert-ce'), { family: 'bert', numLabels: 2, ...SHAPE }, 52);
    const model = await loadModel(loadOptions(written.dir));
    const pairs = [['what is a panda?', 'a bear eats bamboo.'], ['what is a panda?', 'paris is the capital of france.']].map(([a, b]) => model.tokenizer!.encodePair!(a, b));
    const batch = pairs.map((e) => ({ tokens: e.ids, tokenTypeIds: e.tokenTypeIds }));
    const [f32, b16] = await bothRunners(model, batch);
    pairs.forEach((e, i) => {
      const expected = referenceClassifierLogits(written, referenceEncoderStates(written, e.ids, e.tokenTypeIds)[0]);
      Array.from(b16[i]).forEach((v, j) => {
        // Logits of ~1 in size: bfloat16's ~0.1-0.3% per layer, a few 1e-3 at most.
        expect(Math.abs(v - f32[i][j])).toBeLessThan(2e-2);
        expect(Math.abs(v - expected[j])).toBeLessThan(2e-2);
      });
    });
  });
});
