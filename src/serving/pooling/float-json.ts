// A float32 vector as JSON text, byte for byte what JSON.stringify(Array.from(v)) writes (what an
// embedding's float list has always looked like on the wire), from the addon's writer
// (native/src/float-json.cc) where it is built, else from JSON.stringify. The addon takes about
// half of JSON.stringify's time, which formats each double on its own (docs/perf/http-overhead.md).
import { nativeAddonPath } from '../../model/runner/native-kernels';

const ADDON = 'native/build/Release/ortllm_json.node';

interface FloatJsonAddon {
  float32Json(v: Float32Array): string;
}

let addon: FloatJsonAddon | null | undefined;

function floatJsonAddon(): FloatJsonAddon | null {
  if (addon !== undefined) return addon;
  const path = nativeAddonPath(ADDON);
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const loaded = path ? (require(path) as Partial<FloatJsonAddon>) : null;
    addon = typeof loaded?.float32Json === 'function' ? (loaded as FloatJsonAddon) : null;
  } catch {
    addon = null;
  }
  return addon;
}

/** JSON.stringify(Array.from(v)), faster where the addon is built. */
export function float32Json(v: Float32Array): string {
  const native = floatJsonAddon();
  return native ? native.float32Json(v) : JSON.stringify(Array.from(v));
}

/** Whether float32Json runs on the addon (tests say which path they compared). */
export function float32JsonIsNative(): boolean {
  return floatJsonAddon() !== null;
}
