// vLLM's ModelList / ModelCard / ModelPermission (entrypoints/openai/protocol.py).

import { ApiProperty } from '@nestjs/swagger';

export class ModelPermission {
  @ApiProperty({ example: 'modelperm-0123456789abcdef0123456789abcdef' })
  id!: string;
  @ApiProperty({ enum: ['model_permission'] })
  object!: 'model_permission';
  @ApiProperty({ description: 'Unix seconds' })
  created!: number;
  @ApiProperty()
  allow_create_engine!: boolean;
  @ApiProperty()
  allow_sampling!: boolean;
  @ApiProperty()
  allow_logprobs!: boolean;
  @ApiProperty()
  allow_search_indices!: boolean;
  @ApiProperty()
  allow_view!: boolean;
  @ApiProperty()
  allow_fine_tuning!: boolean;
  @ApiProperty({ example: '*' })
  organization!: string;
  @ApiProperty({ type: String, nullable: true })
  group!: string | null;
  @ApiProperty()
  is_blocking!: boolean;
}

export class ModelCard {
  @ApiProperty({ description: 'A served model name (--served-model-name)' })
  id!: string;
  @ApiProperty({ enum: ['model'] })
  object!: 'model';
  @ApiProperty({ description: 'Unix seconds' })
  created!: number;
  @ApiProperty({ example: 'vllm' })
  owned_by!: string;
  @ApiProperty({ type: String, nullable: true, description: 'The model path the server loaded' })
  root!: string | null;
  @ApiProperty({ type: String, nullable: true })
  parent!: string | null;
  @ApiProperty({ type: Number, nullable: true })
  max_model_len!: number | null;
  @ApiProperty({ type: [ModelPermission] })
  permission!: ModelPermission[];
}

export class ModelList {
  @ApiProperty({ enum: ['list'] })
  object!: 'list';
  @ApiProperty({ type: [ModelCard] })
  data!: ModelCard[];
}
