// vLLM's LoRA resolvers: where an adapter name no one has loaded is looked up on first use.
// FilesystemResolver is vLLM's lora_filesystem_resolver plugin: the name is a subdirectory of
// VLLM_LORA_RESOLVER_CACHE_DIR holding a PEFT LoRA whose base_model_name_or_path is the served
// model (--model as given), and names that would leave that directory are never looked up.

import { existsSync, readFileSync, realpathSync } from 'node:fs';
import { isAbsolute, join, relative } from 'node:path';

export interface LoraResolver {
  /** Named in the log line of a load it resolved. */
  readonly name: string;
  /** The adapter's path, or null when this resolver has no adapter of that name for `baseModel`. */
  resolve(baseModel: string, loraName: string): string | null;
}

/** The vLLM plugin name VLLM_PLUGINS must list (when it is set) for the resolver to be used. */
export const FILESYSTEM_RESOLVER_PLUGIN = 'lora_filesystem_resolver';

export class FilesystemResolver implements LoraResolver {
  readonly name = 'FilesystemResolver';
  private readonly root: string;

  constructor(cacheDir: string) {
    this.root = realpathSync(cacheDir);
  }

  resolve(baseModel: string, loraName: string): string | null {
    const path = this.inside(loraName);
    if (path === null) return null;
    const configPath = join(path, 'adapter_config.json');
    if (!existsSync(configPath)) return null;
    let config: { peft_type?: unknown; base_model_name_or_path?: unknown };
    try {
      config = JSON.parse(readFileSync(configPath, 'utf8')) as typeof config;
    } catch {
      return null;
    }
    return config.peft_type === 'LORA' && config.base_model_name_or_path === baseModel ? path : null;
  }

  /** The resolved subdirectory, or null for an absolute name or one that leaves the cache directory (`..`, a symlink out). */
  private inside(loraName: string): string | null {
    if (isAbsolute(loraName)) return null;
    let path: string;
    try {
      path = realpathSync(join(this.root, loraName));
    } catch {
      return null;
    }
    const rel = relative(this.root, path);
    return rel.startsWith('..') || isAbsolute(rel) ? null : path;
  }
}
