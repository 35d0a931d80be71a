import { mropePositions } from '../../../../src/model/vision/mrope-positions';

const spec = { section: [2, 3, 3] as const, spatialMergeSize: 2 };

/** [t..., h..., w...] as three rows, for reading against hand-worked tables. */
function planes(positions: Int32Array): number[][] {
  const n = positions.length / 3;
  return [0, 1, 2].map((p) => Array.from(positions.subarray(p * n, (p + 1) * n)));
}

describe('mropePositions', () => {
  it('gives text-only prompts the 1-D positions on every axis', () => {
    const { positions, delta } = mropePositions([5, 6, 7, 8], [], spec);
    expect(planes(positions)).toEqual([
      [0, 1, 2, 3],
      [0, 1, 2, 3],
      [0, 1, 2, 3],
    ]);
    expect(delta).toBe(0);
  });

  it('lays one image over its merged grid and resumes text past its largest position', () => {
    // 2 text tokens, an image of 4 x 6 patches = 2 x 3 merged tokens, 2 text tokens.
    const tokens = [1, 2, 9, 9, 9, 9, 9, 9, 3, 4];
    const { positions, delta } = mropePositions(tokens, [{ offset: 2, gridThw: [1, 4, 6] }], spec);
    expect(planes(positions)).toEqual([
      [0, 1, 2, 2, 2, 2, 2, 2, 5, 6],
      [0, 1, 2, 2, 2, 3, 3, 3, 5, 6],
      [0, 1, 2, 3, 4, 2, 3, 4, 5, 6],
    ]);
    // The last position is 6 at index 9: the next token (index 10) takes 7.
    expect(delta).toBe(7 - 10);
  });

  it('places two images with text between them', () => {
    // image A: 2 x 2 patches (1 token) at 1; text at 2..3; image B: 6 x 2 patches (3 x 1 tokens) at 4; text at 7.
    const tokens = [1, 9, 2, 3, 9, 9, 9, 4];
    const images = [
      { offset: 1, gridThw: [1, 2, 2] as const },
      { offset: 4, gridThw: [1, 6, 2] as const },
    ];
    const { positions, delta } = mropePositions(tokens, images, spec);
    expect(planes(positions)).toEqual([
      [0, 1, 2, 3, 4, 4, 4, 7],
      [0, 1, 2, 3, 4, 5, 6, 7],
      [0, 1, 2, 3, 4, 4, 4, 7],
    ]);
    expect(delta).toBe(0);
  });

  it('starts with an image at index 0 and ends with one', () => {
    const { positions, delta } = mropePositions([9, 9, 9, 9], [{ offset: 0, gridThw: [1, 4, 4] }], spec);
    expect(planes(positions)).toEqual([
      [0, 0, 0, 0],
      [0, 0, 1, 1],
      [0, 1, 0, 1],
    ]);
    expect(delta).toBe(2 - 4);
  });

  it('refuses images that overlap, overrun the prompt or are not still', () => {
    expect(() => mropePositions([9, 9], [{ offset: 1, gridThw: [1, 4, 2] }], spec)).toThrow(/do not fit/);
    const two = [
      { offset: 0, gridThw: [1, 4, 2] as const },
      { offset: 1, gridThw: [1, 2, 2] as const },
    ];
    expect(() => mropePositions([9, 9, 9], two, spec)).toThrow(/do not fit/);
    expect(() => mropePositions([9, 9], [{ offset: 0, gridThw: [2, 2, 2] }], spec)).toThrow(/still images/);
    expect(() => mropePositions([9, 9], [{ offset: 0, gridThw: [1, 3, 2] }], spec)).toThrow(/merge blocks/);
  });
});
