// POST /v1/load_lora_adapter and /v1/unload_lora_adapter bodies (vLLM's LoadLoRAAdapterRequest,
// UnloadLoRAAdapterRequest).

import { ApiSchema } from '@nestjs/swagger';
import { BoolField, IntField, StringField } from '../../../common/dto/api-field';

@ApiSchema({ name: 'LoadLoRAAdapterRequest' })
export class LoadLoraAdapterDto {
  @StringField({ required: true, description: 'The name requests use in `model` (and /v1/models lists).', example: 'sql-lora' })
  lora_name!: string;

  @StringField({ required: true, description: 'A PEFT directory (adapter_config.json + adapter_model.safetensors) or a llama.cpp GGUF LoRA file, on the server.', example: '/adapters/sql-lora' })
  lora_path!: string;

  @BoolField({ description: 'Replace an adapter already loaded under this name (requests from then on run the new weights).', default: false })
  load_inplace?: boolean | null;
}

@ApiSchema({ name: 'UnloadLoRAAdapterRequest' })
export class UnloadLoraAdapterDto {
  @StringField({ required: true, description: 'The adapter to unload.', example: 'sql-lora' })
  lora_name!: string;

  @IntField({ description: 'When given, it must be the adapter\'s id (otherwise 404).' })
  lora_int_id?: number | null;
}
