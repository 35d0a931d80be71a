// adapter_config.json of a PEFT LoRA directory: the fields that decide how the adapter is served,
// and a refusal (vLLM's wording where it has one) for every field this server cannot honour.
import { LoraLoadError } from './lora-weights';
import type { AdapterScale } from './assemble-lora';

export interface PeftLoraConfig extends AdapterScale {
  /** Whether a module path (e.g. model.layers.3.self_attn.q_proj) is one the config targets. */
  targets(modulePath: string): boolean;
  /** layers_to_transform: the only layers the adapter may adapt; null = all. */
  layers: ReadonlySet<number> | null;
}

type Json = Record<string, unknown>;

export function parsePeftConfig(json: Json, source: string): PeftLoraConfig {
  const peftType = json.peft_type;
  if (peftType !== undefined && peftType !== 'LORA') throw new LoraLoadError(`${source}: peft_type is ${JSON.stringify(peftType)}; only LORA adapters are supported`);
  const missing = ['r', 'lora_alpha', 'target_modules'].filter((key) => json[key] === undefined);
  if (missing.length > 0) throw new LoraLoadError(`${source}: Missing required configuration fields: ${missing.join(', ')}`);
  refuseUnsupported(json, source);
  const rank = json.r;
  const alpha = json.lora_alpha;
  if (typeof rank !== 'number' || !Number.isInteger(rank) || rank <= 0) throw new LoraLoadError(`${source}: r must be a positive integer, got ${JSON.stringify(rank)}`);
  if (typeof alpha !== 'number' || !Number.isFinite(alpha)) throw new LoraLoadError(`${source}: lora_alpha must be a number, got ${JSON.stringify(alpha)}`);
  const scaling = json.use_rslora === true ? alpha / Math.sqrt(rank) : alpha / rank;
  return { rank, alpha, scaling, targets: targetMatcher(json.target_modules, source), layers: layerSet(json.layers_to_transform, source) };
}

function refuseUnsupported(json: Json, source: string): void {
  if (json.use_dora === true) throw new LoraLoadError(`${source}: vLLM does not yet support DoRA (use_dora is true).`);
  if (json.bias !== undefined && json.bias !== 'none') {
    throw new LoraLoadError(`${source}: bias is ${JSON.stringify(json.bias)}: adapter biases are not supported (vLLM: Adapter bias cannot be used without bias_enabled), only bias 'none'`);
  }
  const toSave = json.modules_to_save;
  if (Array.isArray(toSave) ? toSave.length > 0 : toSave !== undefined && toSave !== null) {
    throw new LoraLoadError(`${source}: modules_to_save is ${JSON.stringify(toSave)}; vLLM only supports modules_to_save being None (fully trained modules are not served)`);
  }
  for (const key of ['rank_pattern', 'alpha_pattern'] as const) {
    const pattern = json[key];
    if (pattern && typeof pattern === 'object' && Object.keys(pattern).length > 0) {
      throw new LoraLoadError(`${source}: ${key} is set; per-module ranks and alphas are not supported (every adapted module must have rank r and lora_alpha)`);
    }
  }
  if (typeof json.context_length === 'number' && json.context_length > 0) {
    throw new LoraLoadError(`${source}: context_length is set (a long-context LoRA with its own RoPE scaling); it is not supported`);
  }
  if (json.layers_pattern !== undefined && json.layers_pattern !== null && json.layers_to_transform === undefined) {
    throw new LoraLoadError(`${source}: layers_pattern is set without layers_to_transform; it is not supported`);
  }
}

/** PEFT's rules: a list matches a module whose name is an entry or ends with '.' + entry; a string is a regex the whole path must match; 'all-linear' = every linear. */
function targetMatcher(target: unknown, source: string): (path: string) => boolean {
  if (target === 'all-linear') return () => true;
  if (typeof target === 'string') {
    let regex: RegExp;
    try {
      regex = new RegExp(`^(?:${target})$`);
    } catch (err) {
      throw new LoraLoadError(`${source}: target_modules regex ${JSON.stringify(target)} is invalid (${(err as Error).message})`);
    }
    return (path) => regex.test(path);
  }
  if (Array.isArray(target) && target.every((t) => typeof t === 'string')) {
    const names = target;
    return (path) => names.some((n) => path === n || path.endsWith(`.${n}`));
  }
  throw new LoraLoadError(`${source}: target_modules must be a list of module names or a regex string, got ${JSON.stringify(target)}`);
}

function layerSet(value: unknown, source: string): ReadonlySet<number> | null {
  if (value === undefined || value === null) return null;
  const list = typeof value === 'number' ? [value] : value;
  if (!Array.isArray(list) || !list.every((v) => Number.isInteger(v) && v >= 0)) {
    throw new LoraLoadError(`${source}: layers_to_transform must be a layer index or a list of them, got ${JSON.stringify(value)}`);
  }
  return new Set(list as number[]);
}
