import { Logger, Module, type OnModuleInit } from '@nestjs/common';
import { LoraAdaptersController } from './lora-adapters.controller';

/** POST /v1/load_lora_adapter, /v1/unload_lora_adapter (VLLM_ALLOW_RUNTIME_LORA_UPDATING). */
@Module({ controllers: [LoraAdaptersController] })
export class LoraAdaptersModule implements OnModuleInit {
  onModuleInit(): void {
    // vLLM's warning: any client holding the API key can make the server read a path it names.
    new Logger('LoRA').warn('LoRA dynamic loading & unloading is enabled in the API server. This should ONLY be used for local development!');
  }
}
