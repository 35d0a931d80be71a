// GET /v1/models: one card per served model name, then one per loaded LoRA adapter (root: its
// path, parent: its base model), in vLLM's ModelList shape.

import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { randomRequestId } from '../../serving/ids';
import { DUMMY_MODEL_NAME, ServerConfig } from '../../config/server-config';
import type { EngineClient } from '../../engine/types';
import type { ServedModels } from '../../serving/lora/served-models';
import { ENGINE_CLIENT, SERVED_MODELS, SERVER_CONFIG } from '../engine/engine.tokens';
import { ModelCard, ModelList, ModelPermission } from './model-list.dto';

@ApiTags('models')
@Controller('v1')
export class ModelsController {
  constructor(
    @Inject(ENGINE_CLIENT) private readonly engine: EngineClient,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
    @Inject(SERVED_MODELS) private readonly models: ServedModels,
  ) {}

  @Get('models')
  @ApiOperation({ summary: 'List the served models', description: 'One card per --served-model-name, then one per loaded LoRA adapter.' })
  @ApiOkResponse({ type: ModelList, description: 'The served models and adapters.' })
  showAvailableModels(): ModelList {
    const created = Math.floor(Date.now() / 1000);
    const root = this.config.model ?? DUMMY_MODEL_NAME;
    const card = (id: string, cardRoot: string, parent: string | null, maxModelLen: number | null): ModelCard => ({
      id,
      object: 'model',
      created,
      owned_by: 'vllm',
      root: cardRoot,
      parent,
      max_model_len: maxModelLen,
      permission: [permission(created)],
    });
    const bases = this.config.servedModelNames.map((id) => card(id, root, null, this.engine.maxModelLen));
    // vLLM's adapter cards carry no max_model_len.
    const adapters = this.models.list().map(({ request, parent }) => card(request.name, request.path, parent, null));
    return { object: 'list', data: [...bases, ...adapters] };
  }
}

function permission(created: number): ModelPermission {
  return {
    id: `modelperm-${randomRequestId()}`,
    object: 'model_permission',
    created,
    allow_create_engine: false,
    allow_sampling: true,
    allow_logprobs: true,
    allow_search_indices: false,
    allow_view: true,
    allow_fine_tuning: false,
    organization: '*',
    group: null,
    is_blocking: false,
  };
}
