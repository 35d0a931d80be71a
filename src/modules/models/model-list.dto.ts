// vLLM's ModelList / ModelCard / ModelPermission (entrypoints/openai/protocol.py).

import { ApiProperty } from '@nestjs/swagger';

export class ModelPermission {
  @ApiProperty({ example: 'modelperm-0123456789abcdef0123456789abcdef', description: 'modelperm-<random id>.' })
  id!: string;
  @ApiProperty({ enum: ['model_permission'], description: 'Always model_permission.' })
  object!: 'model_permission';
  @ApiProperty({ description: 'Unix seconds.' })
  created!: number;
  @ApiProperty({ description: 'Always false.' })
  allow_create_engine!: boolean;
  @ApiProperty({ description: 'Always true.' })
  allow_sampling!: boolean;
  @ApiProperty({ description: 'Always true.' })
  allow_logprobs!: boolean;
  @ApiProperty({ description: 'Always false.' })
  allow_search_indices!: boolean;
  @ApiProperty({ description: 'Always true.' })
  allow_view!: boolean;
  @ApiProperty({ description: 'Always false.' })
  allow_fine_tuning!: boolean;
  @ApiProperty({ example: '*', description: 'Always "*".' })
  organization!: string;
  @ApiProperty({ type: String, nullable: true, description: 'Always null.' })
  group!: string | null;
  @ApiProperty({ description: 'Always false.' })
  is_blocking!: boolean;
}

export class ModelCard {
  @ApiProperty({ description: 'A served model name (--served-model-name) or a LoRA adapter\'s name.' })
  id!: string;
  @ApiProperty({ enum: ['model'], description: 'Always model.' })
  object!: 'model';
  @ApiProperty({ description: 'Unix seconds.' })
  created!: number;
  @ApiProperty({ example: 'vllm', description: 'Always vllm (as vLLM reports).' })
  owned_by!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The model path the server loaded; an adapter\'s path for an adapter.' })
  root!: string | null;
  @ApiProperty({ type: String, nullable: true, description: 'The served base model of an adapter; null for a base model.' })
  parent!: string | null;
  @ApiProperty({ type: Number, nullable: true, description: 'Context length (prompt + output) in tokens; null for an adapter.' })
  max_model_len!: number | null;
  @ApiProperty({ type: [ModelPermission], description: 'One permission object.' })
  permission!: ModelPermission[];
}

export class ModelList {
  @ApiProperty({ enum: ['list'], description: 'Always list.' })
  object!: 'list';
  @ApiProperty({ type: [ModelCard], description: 'One card per served model name, then one per loaded LoRA adapter.' })
  data!: ModelCard[];
}
