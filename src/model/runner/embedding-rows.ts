// Token embedding lookup outside the graph: a row copy per token (GGML-quantized rows are
// dequantized one at a time), so the embedding stays in the form it was loaded in instead of a
// float32 copy inside a session (a Q8_0 32000 x 2048 table is 70 MB; as float32 in a graph, 262 MB).
//
// Where the loader says the table lies unchanged in the model file (WeightTensor.file: GGUF
// tensors that are neither converted nor permuted, float32 safetensors), each row is read from the
// file with a positional read instead (`fileBacked`), and the runner drops the loaded copy: the
// rows a step needs come from the page cache, which is not the server's resident memory.
// A small table stays in memory (FILE_ROWS_MIN_BYTES): a positional read costs a few µs a row
// whatever the row's size, which is most of a small model's lookup and nothing it saves counts.
// Figures (resident memory, a lookup's cost, the runner with the table in memory):
// docs/perf/embedding-rows.md.
import { closeSync, openSync } from 'node:fs';
import { dequantizeInto } from '../gguf/dequant';
import { readFully } from '../read-fully';
import type { ModelArchConfig, ModelWeights, QuantFormat, WeightTensor } from '../types';

/** Tables smaller than this are read from memory even where their bytes lie in the model file. */
export const FILE_ROWS_MIN_BYTES = 8 * 2 ** 20;

/** Where the rows come from: the loaded tensor, or its bytes in the model file. */
type RowStore =
  | { kind: 'memory'; tensor: WeightTensor }
  | { kind: 'file'; fd: number; path: string; offset: number; format: QuantFormat | 'f32'; scratch: Uint8Array };

export class EmbeddingRows {
  private readonly hidden: number;
  private readonly vocab: number;
  private readonly rowBytes: number;
  private store: RowStore | null;

  /**
   * Rows are read from the model file where the tensor says where its bytes are and the table
   * has at least `fileMinBytes` (`fileBacked` tells whether they are); otherwise they are copied
   * from the loaded tensor. `fileMinBytes` Infinity: always from memory.
   */
  constructor(weights: ModelWeights, name: string, config: ModelArchConfig, fileMinBytes = FILE_ROWS_MIN_BYTES) {
    if (!weights.has(name)) throw new Error(`model weights lack tensor '${name}'`);
    const tensor = weights.get(name);
    const [vocab, hidden] = tensor.shape;
    if (vocab !== config.vocabSize || hidden !== config.hiddenSize) {
      throw new Error(`'${name}' has shape [${tensor.shape.join(', ')}], expected [${config.vocabSize}, ${config.hiddenSize}]`);
    }
    this.vocab = vocab;
    this.hidden = hidden;
    this.rowBytes = tensor.data.byteLength / vocab;
    const file = tensor.data.byteLength >= fileMinBytes ? tensor.file : undefined;
    if (file && file.byteLength === tensor.data.byteLength) {
      const format = tensor.kind === 'f32' ? 'f32' : tensor.format;
      this.store = { kind: 'file', fd: openSync(file.path, 'r'), path: file.path, offset: file.offset, format, scratch: new Uint8Array(this.rowBytes) };
    } else {
      this.store = { kind: 'memory', tensor };
    }
  }

  /** True when rows are read from the model file: the loaded tensor is no longer needed. */
  get fileBacked(): boolean {
    return this.store?.kind === 'file';
  }

  /** [tokens.length, hidden] float32 rows. */
  rows(tokens: ArrayLike<number>): Float32Array {
    const h = this.hidden;
    const out = new Float32Array(tokens.length * h);
    const store = this.store;
    if (!store) throw new Error('the embedding table is closed (the runner was disposed)');
    for (let i = 0; i < tokens.length; i++) {
      const id = tokens[i];
      if (!Number.isInteger(id) || id < 0 || id >= this.vocab) throw new Error(`token id ${id} is outside the vocabulary (0..${this.vocab - 1})`);
      if (store.kind === 'memory') copyRow(store.tensor, id, this.rowBytes, h, out, i * h);
      else this.readRow(store, id, out, i * h);
    }
    return out;
  }

  /** Closes the model file (a file-backed table). */
  close(): void {
    if (this.store?.kind === 'file') closeSync(this.store.fd);
    this.store = null;
  }

  private readRow(store: Extract<RowStore, { kind: 'file' }>, id: number, out: Float32Array, at: number): void {
    const position = store.offset + id * this.rowBytes;
    const what = `${store.path}: embedding row ${id}`;
    if (store.format === 'f32') {
      readFully(store.fd, new Uint8Array(out.buffer, out.byteOffset + at * 4, this.rowBytes), position, what);
    } else {
      readFully(store.fd, store.scratch, position, what);
      dequantizeInto(store.format, store.scratch, this.hidden, out, at);
    }
  }
}

function copyRow(t: WeightTensor, id: number, rowBytes: number, h: number, out: Float32Array, at: number): void {
  if (t.kind === 'f32') out.set(t.data.subarray(id * h, (id + 1) * h), at);
  else dequantizeInto(t.format, t.data.subarray(id * rowBytes, (id + 1) * rowBytes), h, out, at);
}
