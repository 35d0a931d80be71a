// Token embedding lookup outside the graph: a row copy per token (GGML-quantized rows are
// dequantized one at a time), so the embedding stays in the form it was loaded in instead of a
// float32 copy inside a session (a Q8_0 32000 x 2048 table is 70 MB; as float32 in a graph, 262 MB).
import { dequantize } from '../gguf/dequant';
import type { ModelArchConfig, ModelWeights, WeightTensor } from '../types';

export class EmbeddingRows {
  private readonly tensor: WeightTensor;
  private readonly hidden: number;
  private readonly vocab: number;
  private readonly rowBytes: number;

  constructor(weights: ModelWeights, name: string, config: ModelArchConfig) {
    if (!weights.has(name)) throw new Error(`model weights lack tensor '${name}'`);
    this.tensor = weights.get(name);
    const [vocab, hidden] = this.tensor.shape;
    if (vocab !== config.vocabSize || hidden !== config.hiddenSize) {
      throw new Error(`'${name}' has shape [${this.tensor.shape.join(', ')}], expected [${config.vocabSize}, ${config.hiddenSize}]`);
    }
    this.vocab = vocab;
    this.hidden = hidden;
    this.rowBytes = this.tensor.data.byteLength / vocab;
  }

  /** [tokens.length, hidden] float32 rows. */
  rows(tokens: ArrayLike<number>): Float32Array {
    const h = this.hidden;
    const out = new Float32Array(tokens.length * h);
    const t = this.tensor;
    for (let i = 0; i < tokens.length; i++) {
      const id = tokens[i];
      if (!Number.isInteger(id) || id < 0 || id >= this.vocab) throw new Error(`token id ${id} is outside the vocabulary (0..${this.vocab - 1})`);
      if (t.kind === 'f32') out.set(t.data.subarray(id * h, (id + 1) * h), i * h);
      else out.set(dequantize(t.format, t.data.subarray(id * this.rowBytes, (id + 1) * this.rowBytes), h), i * h);
    }
    return out;
  }
}
