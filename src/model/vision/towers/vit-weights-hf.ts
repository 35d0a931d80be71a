// The tower's and projector's tensors from a Hugging Face checkpoint (Gemma3ForConditionalGeneration,
// LlavaForConditionalGeneration): `vision_tower.vision_model.*` and `multi_modal_projector.*`, or
// the same under `model.` (transformers >= 4.52). Tensors the tower never reads at this depth
// (layers past LLaVA's feature layer, CLIP's post_layernorm, SigLIP's head) are skipped; any other
// tower tensor is refused by name.
import { checkWeightShapes } from '../../architectures/registry';
import { checkSafetensorsDtype, listSafetensors, readSafetensorsAsF32, type SafetensorsTensor } from '../../hf/safetensors';
import { WeightMap } from '../../weight-map';
import type { VitConfig } from './vit-config';
import { IMAGE_NEWLINE, PROJECTOR, TOWER, vitWeightSpecs } from './vit-weights';

const NEWER_PREFIX = 'model.';

/** The canonical name of a stored tensor, or null when it is not the tower's or the projector's. */
function canonicalName(stored: string): string | null {
  if (stored === IMAGE_NEWLINE || stored === NEWER_PREFIX + IMAGE_NEWLINE) return IMAGE_NEWLINE;
  const name = stored.startsWith(NEWER_PREFIX + TOWER) || stored.startsWith(NEWER_PREFIX + PROJECTOR) ? stored.slice(NEWER_PREFIX.length) : stored;
  return name.startsWith(TOWER) || name.startsWith(PROJECTOR) ? name : null;
}

function unused(name: string, c: VitConfig): boolean {
  const layer = /^vision_tower\.vision_model\.encoder\.layers\.(\d+)\./.exec(name);
  if (layer) return Number(layer[1]) >= c.numLayers;
  if (name.startsWith(`${TOWER}post_layernorm.`)) return !c.postNorm;
  return name.startsWith(`${TOWER}head.`) || name.endsWith('.position_ids');
}

/** Reads the tower's weights of `dir`; `adjust` converts a stored value to its canonical form, by canonical name. */
export function readHfVitWeights(dir: string, c: VitConfig, adjust: (name: string) => ((values: Float32Array) => void) | null): WeightMap {
  const tensors = listSafetensors(dir);
  if (!tensors) throw new Error(`${dir}: no model.safetensors or model.safetensors.index.json for the vision tower`);
  const wanted = new Map<string, SafetensorsTensor>();
  for (const tensor of tensors.values()) {
    const name = canonicalName(tensor.name);
    if (name !== null && !unused(name, c)) wanted.set(name, tensor);
  }
  const specs = vitWeightSpecs(c);
  checkWeightShapes(specs, (name) => wanted.get(name)?.shape, dir);
  const known = new Set(specs.map((s) => s.name));
  for (const [name, tensor] of wanted) {
    if (!known.has(name)) throw new Error(`${tensor.file}: tensor ${tensor.name} is not part of a vision tower this server can run`);
    checkSafetensorsDtype(tensor);
  }
  const weights = new WeightMap();
  const names = new Map([...wanted].map(([name, tensor]) => [tensor, name]));
  readSafetensorsAsF32([...wanted.values()], (tensor, data) => {
    const name = names.get(tensor)!;
    adjust(name)?.(data);
    weights.set(name, { kind: 'f32', shape: tensor.shape, data });
  });
  return weights;
}
