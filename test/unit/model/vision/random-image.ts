// Seeded random RGB images for the preprocessing tests (mulberry32, so runs repeat).
import type { RgbImage } from '../../../../src/model/vision/rgb-image';

export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function randomImage(width: number, height: number, seed: number): RgbImage {
  const next = seededRandom(seed);
  return { width, height, data: Uint8Array.from({ length: width * height * 3 }, () => Math.floor(next() * 256)) };
}
