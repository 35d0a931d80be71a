// GET /v1/models: one card per served model name, in vLLM's ModelList shape.

import { Controller, Get, Inject } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { randomRequestId } from '../../serving/ids';
import { DUMMY_MODEL_NAME, ServerConfig } from '../../config/server-config';
import type { EngineClient } from '../../engine/types';
import { ENGINE_CLIENT, SERVER_CONFIG } from '../engine/engine.tokens';
import { ModelCard, ModelList, ModelPermission } from './model-list.dto';

@ApiTags('models')
@Controller('v1')
export class ModelsController {
  constructor(
    @Inject(ENGINE_CLIENT) private readonly engine: EngineClient,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  @Get('models')
  @ApiOperation({ summary: 'List the served models', description: 'One card per --served-model-name.' })
  @ApiOkResponse({ type: ModelList, description: 'The served models.' })
  showAvailableModels(): ModelList {
    const created = Math.floor(Date.now() / 1000);
    const root = this.config.model ?? DUMMY_MODEL_NAME;
    const data = this.config.servedModelNames.map(
      (id): ModelCard => ({
        id,
        object: 'model',
        created,
        owned_by: 'vllm',
        root,
        parent: null,
        max_model_len: this.engine.maxModelLen,
        permission: [permission(created)],
      }),
    );
    return { object: 'list', data };
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
