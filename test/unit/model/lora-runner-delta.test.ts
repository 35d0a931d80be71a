// The native backends' LoRA products (runner/backends/lora-delta.ts): the f32 addon's f32LoraAdd
// and the plain loops against a float64 reference, over a pass whose slots' rows are interleaved
// (gathered, not contiguous), with base rows left alone and an output laid out as the second half
// of a fused [rows, 2 * out] buffer.
import { llamaConfig } from '../../../bench/random-llama';
import { randomAdapter } from '../../../bench/random-lora';
import { LoraDeltas } from '../../../src/model/runner/backends/lora-delta';
import { f32Addon } from '../../../src/model/runner/backends/native-f32';
import { maxAbsDiff } from '../../helpers/runner-driver';

const config = llamaConfig({ intermediateSize: 96 });
const adapters = [randomAdapter(config, 16, 8, 21), randomAdapter(config, 8, 32, 22)];
const rowSlot = Int32Array.from([0, -1, 1, 0, 1, -1, 0]);
const rows = rowSlot.length;
const h = config.hiddenSize;
const inter = 96;
const x = Float32Array.from({ length: rows * h }, (_, i) => Math.sin(i * 0.37));
const y0 = Float32Array.from({ length: rows * 2 * inter }, (_, i) => Math.cos(i * 0.11));

/** y0 with each adapter row's up_proj product added in float64, in the up half of each row. */
function reference(): Float32Array {
  const y = Float64Array.from(y0);
  rowSlot.forEach((slot, row) => {
    if (slot < 0) return;
    const pair = adapters[slot].layers[1].get('up_proj')!;
    for (let j = 0; j < inter; j++) {
      let sum = 0;
      for (let r = 0; r < pair.rank; r++) {
        let t = 0;
        for (let i = 0; i < h; i++) t += x[row * h + i] * pair.a[r * h + i];
        sum += t * pair.b[j * pair.rank + r];
      }
      y[row * 2 * inter + inter + j] += sum;
    }
  });
  return Float32Array.from(y);
}

const addon = f32Addon();
const backends: Array<[string, typeof addon]> = [['plain loops', null]];
if (addon?.f32LoraAdd) backends.push(['the f32 addon', addon]);
else console.warn('\n*** SKIPPING the f32LoraAdd case: ortllm_f32 is not built (or predates it) ***\n');

describe.each(backends)('LoRA products with %s', (_, a) => {
  it('adds each slot\'s product to its rows only, wherever they lie, in the output\'s layout', () => {
    const y = y0.slice();
    new LoraDeltas({ slots: [adapters[0], adapters[1], null], rowSlot }, a).add(1, 'up_proj', x, y, { stride: 2 * inter, offset: inter });
    expect(maxAbsDiff(y, reference())).toBeLessThan(1e-5);
    // Base rows and every gate half are untouched.
    for (let row = 0; row < rows; row++) {
      const gate = y.subarray(row * 2 * inter, row * 2 * inter + inter);
      expect(gate).toEqual(y0.subarray(row * 2 * inter, row * 2 * inter + inter));
      if (rowSlot[row] < 0) expect(y.subarray(row * 2 * inter, (row + 1) * 2 * inter)).toEqual(y0.subarray(row * 2 * inter, (row + 1) * 2 * inter));
    }
  });

  it('refuses a row naming an empty slot', () => {
    expect(() => new LoraDeltas({ slots: [adapters[0], null], rowSlot: Int32Array.from([0, 1]) }, a)).toThrow(/slot 1, which holds no adapter/);
  });
});
