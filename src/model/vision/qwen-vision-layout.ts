// Where each patch of one image goes in Qwen2.5-VL's tower, computed per image size: the 2-D
// rotary position of every patch (transformers' rot_pos_emb), and the window order
// (get_window_index) in which the blocks see the merged units: windows of w x w units, row by row
// over the image, the units of each window row by row; units past the image's edge leave a window
// short. Windowed blocks attend in equal padded windows (gather, key mask, scatter back); the
// merger's output comes back to the image's order through `restoreOrder`.
import { windowUnits, type QwenVisionConfig } from './qwen-vision-config';

export interface QwenVisionLayout {
  /** [patches, 2]: each patch's (row, column) in patches, in the preprocessed order. */
  rotaryPositions: BigInt64Array;
  /** [units]: the merged units (groups of merge^2 consecutive patches) in window order. */
  windowOrder: BigInt64Array;
  /** [windows * slots]: for each window's slots, the patch (window order) it holds; padding slots repeat the window's first. */
  windowGather: BigInt64Array;
  /** [windows * slots] booleans (0/1): which slots hold a real patch (the keys attention may read). */
  windowKeys: Uint8Array;
  /** Slots per window: the patches of a whole window. */
  windowSlots: number;
  /** [patches]: each patch's (window order) slot in the padded windows. */
  windowScatter: BigInt64Array;
  /** [units]: where each unit of the image's order lies in window order (argsort of windowOrder). */
  restoreOrder: BigInt64Array;
}

/** The layout of a still image of gridH x gridW patches. */
export function qwenVisionLayout(config: QwenVisionConfig, gridH: number, gridW: number): QwenVisionLayout {
  const m = config.spatialMergeSize;
  if (gridH % m || gridW % m) throw new Error(`an image grid of ${gridH} x ${gridW} patches does not divide into ${m} x ${m} merge blocks`);
  const unitRows = gridH / m;
  const unitColumns = gridW / m;
  const units = unitRows * unitColumns;
  const perUnit = m * m;

  const rotaryPositions = new BigInt64Array(2 * units * perUnit);
  let patch = 0;
  for (let r = 0; r < unitRows; r++) {
    for (let c = 0; c < unitColumns; c++) {
      for (let y = 0; y < m; y++) {
        for (let x = 0; x < m; x++, patch++) {
          rotaryPositions[2 * patch] = BigInt(r * m + y);
          rotaryPositions[2 * patch + 1] = BigInt(c * m + x);
        }
      }
    }
  }

  const side = windowUnits(config);
  const windowOrder = new BigInt64Array(units);
  const restoreOrder = new BigInt64Array(units);
  /** Each window's first unit (window order) and unit count. */
  const windows: Array<{ first: number; count: number }> = [];
  let at = 0;
  for (let top = 0; top < unitRows; top += side) {
    for (let left = 0; left < unitColumns; left += side) {
      const first = at;
      for (let r = top; r < Math.min(top + side, unitRows); r++) {
        for (let c = left; c < Math.min(left + side, unitColumns); c++, at++) {
          const unit = r * unitColumns + c;
          windowOrder[at] = BigInt(unit);
          restoreOrder[unit] = BigInt(at);
        }
      }
      windows.push({ first, count: at - first });
    }
  }

  const windowSlots = side * side * perUnit;
  const windowGather = new BigInt64Array(windows.length * windowSlots);
  const windowKeys = new Uint8Array(windows.length * windowSlots);
  const windowScatter = new BigInt64Array(units * perUnit);
  windows.forEach(({ first, count }, w) => {
    const start = first * perUnit;
    const length = count * perUnit;
    for (let slot = 0; slot < windowSlots; slot++) {
      const real = slot < length;
      windowGather[w * windowSlots + slot] = BigInt(start + (real ? slot : 0));
      windowKeys[w * windowSlots + slot] = real ? 1 : 0;
      if (real) windowScatter[start + slot] = BigInt(w * windowSlots + slot);
    }
  });
  return { rotaryPositions, windowOrder, restoreOrder, windowGather, windowKeys, windowSlots, windowScatter };
}
