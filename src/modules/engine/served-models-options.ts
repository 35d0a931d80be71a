// The served-models registry's options from the flags: the served names, --enable-lora, and vLLM's
// filesystem LoRA resolver (VLLM_LORA_RESOLVER_CACHE_DIR), used only with
// VLLM_ALLOW_RUNTIME_LORA_UPDATING as in vLLM.

import { Logger } from '@nestjs/common';
import { DUMMY_MODEL_NAME, loraResolverCacheDirOf, type ServerConfig } from '../../config/server-config';
import { FILESYSTEM_RESOLVER_PLUGIN, FilesystemResolver } from '../../serving/lora/lora-resolvers';
import type { ServedModelsOptions } from '../../serving/lora/served-models';

export function servedModelsOptions(config: ServerConfig): ServedModelsOptions {
  const log = new Logger('LoRA');
  const others = (config.vllmPlugins ?? []).filter((plugin) => plugin !== FILESYSTEM_RESOLVER_PLUGIN);
  if (others.length > 0) log.warn(`VLLM_PLUGINS: ${others.join(', ')} not loaded (vLLM plugins are Python); ${FILESYSTEM_RESOLVER_PLUGIN} is the one plugin ortllm has`);
  const resolverDir = loraResolverCacheDirOf(config);
  if (resolverDir !== null && !config.allowRuntimeLoraUpdating) log.warn('VLLM_LORA_RESOLVER_CACHE_DIR has no effect without VLLM_ALLOW_RUNTIME_LORA_UPDATING (as in vLLM)');
  return {
    servedModelNames: config.servedModelNames,
    enableLora: config.enableLora,
    baseModel: config.model ?? DUMMY_MODEL_NAME,
    resolvers: resolverDir !== null && config.allowRuntimeLoraUpdating ? [new FilesystemResolver(resolverDir)] : [],
    log,
  };
}
