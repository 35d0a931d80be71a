// A request's images inside the engine core: where each one's rows go in the prompt, its
// pixels until encoded, then its encoder output for the request's life (a preempted or
// chunked prefill takes the rows again, and the pixels are gone by then), and its M-RoPE
// positions. Every sequence of the request (n > 1) reads the same rows.

import { EngineInvariantError } from '../errors';
import type { DecodedImage, EngineRequest, ImagePlacement, MultiModalInput } from '../types';

/** Rows of a step's tokens that take given vectors (StepSequence.inputEmbeds). */
export interface InputEmbedRows {
  row: number;
  data: Float32Array;
}

export class RequestImages {
  readonly placements: readonly ImagePlacement[];
  readonly processorKwargs: Record<string, unknown>;
  private readonly pixels: (DecodedImage | null)[];
  private readonly outputs: (Float32Array | null)[];
  private readonly mrope: MultiModalInput['mrope'];

  constructor(input: MultiModalInput) {
    this.placements = input.placements ?? [];
    this.processorKwargs = input.processorKwargs;
    this.pixels = [...input.images];
    this.outputs = this.placements.map(() => null);
    this.mrope = input.mrope;
  }

  get count(): number {
    return this.placements.length;
  }

  /** Indexes of the images with rows among prompt positions [start, start + count). */
  overlapping(start: number, count: number): number[] {
    const end = start + count;
    const found: number[] = [];
    this.placements.forEach((p, i) => {
      if (p.offset < end && p.offset + p.length > start) found.push(i);
    });
    return found;
  }

  /** The encoder output held for image `index` (null until encoded or taken from the cache). */
  output(index: number): Float32Array | null {
    return this.outputs[index];
  }

  /** Keeps image `index`'s output and drops its pixels: nothing reads them again. */
  hold(index: number, rows: Float32Array): void {
    this.outputs[index] = rows;
    this.pixels[index] = null;
  }

  /** Image `index`'s pixels (an error once dropped: its output is held instead). */
  pixelsOf(index: number): DecodedImage {
    const image = this.pixels[index];
    if (!image) throw new Error(`image ${index} was dropped before it was encoded`);
    return image;
  }

  /**
   * The image rows among the step's tokens, which cover prompt positions [start, start + count):
   * each overlapping image's slice, at its row in the step. Every overlapping output must be held.
   */
  embedsFor(start: number, count: number, hiddenSize: number): InputEmbedRows[] | undefined {
    let rows: InputEmbedRows[] | undefined;
    for (const i of this.overlapping(start, count)) {
      const { offset, length } = this.placements[i];
      const output = this.outputs[i];
      if (!output) throw new Error(`image ${i} has no encoder output`);
      const from = Math.max(start, offset);
      const to = Math.min(start + count, offset + length);
      (rows ??= []).push({ row: from - start, data: output.subarray((from - offset) * hiddenSize, (to - offset) * hiddenSize) });
    }
    return rows;
  }

  /**
   * The images among a step's prompt positions [start, start + count) as StepSequence.bidirectionalRuns
   * (rows of the step). Each must lie wholly in the step: the scheduler never cuts one.
   */
  wholeRuns(start: number, count: number): { row: number; count: number }[] {
    return this.overlapping(start, count).map((i) => {
      const { offset, length } = this.placements[i];
      if (offset < start || offset + length > start + count) {
        throw new EngineInvariantError(`a step covers positions ${start}..${start + count - 1}, cutting image ${i} at ${offset}..${offset + length - 1}`);
      }
      return { row: offset - start, count: length };
    });
  }

  /**
   * M-RoPE: the (t, h, w) positions of positions [start, start + count), laid out as
   * StepSequence.ropePositions (every row's t, then h, then w). Prompt rows take the serving
   * side's positions; later ones index + delta on all three axes. undefined without M-RoPE.
   */
  ropePositions(start: number, count: number): Int32Array | undefined {
    const mrope = this.mrope;
    if (!mrope) return undefined;
    // The positions cover the prompt the serving side built (a beam's prompt may be longer).
    const n = mrope.positions.length / 3;
    const out = new Int32Array(3 * count);
    for (let r = 0; r < count; r++) {
      const pos = start + r;
      for (let axis = 0; axis < 3; axis++) out[axis * count + r] = pos < n ? mrope.positions[axis * n + pos] : pos + mrope.delta;
    }
    return out;
  }
}

/**
 * What the serving side promised about a request's images: one placement per image, inside the
 * prompt, in order and apart, M-RoPE positions of the prompt's length; and that the model has an
 * encoder. Throws EngineInvariantError otherwise (a bug upstream, as assertRequestInvariants).
 */
export function assertImageInvariants(request: EngineRequest, hasEncoder: boolean): void {
  const input = request.multiModal;
  if (!input || input.images.length === 0) return;
  const fail = (broken: string): never => {
    throw new EngineInvariantError(`request ${request.requestId} reached the engine with ${broken}`);
  };
  if (!hasEncoder) fail('images for a model without an image encoder');
  const placements = input.placements ?? [];
  if (placements.length !== input.images.length) fail(`${input.images.length} images and ${placements.length} placements`);
  let end = 0;
  for (const p of placements) {
    if (!Number.isInteger(p.offset) || !Number.isInteger(p.length) || p.length < 1 || p.offset < end) fail(`image placements out of order or overlapping`);
    end = p.offset + p.length;
  }
  if (end > request.promptTokenIds.length) fail('an image placement beyond the prompt');
  const mropeRows = input.mrope ? input.mrope.positions.length / 3 : 0;
  if (input.mrope && !(Number.isInteger(mropeRows) && mropeRows >= end && mropeRows <= request.promptTokenIds.length)) fail('M-RoPE positions that do not fit the prompt');
}
