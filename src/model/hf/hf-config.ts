// A Hugging Face config.json -> the architecture descriptor that reads it (by model_type) and its config.
import type { ArchitectureDescriptor, HfConfigContext } from '../architectures/architecture';
import { architectureForHfModelType } from '../architectures/registry';
import type { ModelArchConfig } from '../types';

export interface HfArchitecture<C extends ModelArchConfig = ModelArchConfig> {
  descriptor: ArchitectureDescriptor<C>;
  config: C;
}

export function hfArchitecture(json: Record<string, unknown>, ctx: HfConfigContext): HfArchitecture {
  const descriptor = architectureForHfModelType(json.model_type, ctx.source);
  return { descriptor, config: descriptor.hf.config(json, ctx) };
}
