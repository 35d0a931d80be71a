// VLLM_SERVER_DEV_MODE=1 endpoints: POST /reset_prefix_cache, GET /server_info, POST /sleep,
// POST /wake_up, GET /is_sleeping, POST /collective_rpc (400: there are no Python workers), and
// GET /kv_cache/blocks (ortllm's: the prefix cache's blocks as KV events name them).
// Sleep frees the KV cache and the onnxruntime session (level 2: the weights too, reloaded
// from disk on wake); while asleep, generation answers 503.

import { Controller, Get, HttpCode, Inject, Post, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProperty, ApiQuery, ApiTags } from '@nestjs/swagger';
import { OpenAIHttpError } from '../../serving/openai-error';
import { ServerConfig } from '../../config/server-config';
import type { EngineClient, SleepLevel } from '../../engine/types';
import { redactConfig } from '../../config/redact';
import { ORTLLM_VERSION } from '../../config/version';
import { ENGINE_CLIENT, SERVER_CONFIG } from '../engine/engine.tokens';

export class IsSleepingResponse {
  @ApiProperty({ description: 'Whether the engine is asleep (POST /sleep without /wake_up since).' })
  is_sleeping!: boolean;
}

export class KvCacheGroupBlocks {
  @ApiProperty({ description: 'The KV cache group (pool), as group_idx in KV events' })
  group_idx!: number;

  @ApiProperty({ description: 'Tokens per block' })
  block_size!: number;

  @ApiProperty({ description: "The group's sliding window in tokens; null for full attention", nullable: true, type: Number })
  sliding_window!: number | null;

  @ApiProperty({ description: 'Hashes of the cached blocks as KV events send them (unsigned 64-bit integers, as decimal strings)', type: [String] })
  block_hashes!: string[];
}

export class KvCacheBlocksResponse {
  @ApiProperty({ type: [KvCacheGroupBlocks], description: 'One entry per KV cache group (pool): one for most models, one per attention kind for models with sliding-window layers' })
  groups!: KvCacheGroupBlocks[];
}

export class ServerInfoResponse {
  @ApiProperty({ description: 'The server and engine configuration: text, or an object with config_format=json' })
  vllm_config!: string | Record<string, unknown>;
}

@ApiTags('dev')
@Controller()
export class DevController {
  constructor(
    @Inject(ENGINE_CLIENT) private readonly engine: EngineClient,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  @Post('reset_prefix_cache')
  @HttpCode(200)
  @ApiOperation({ summary: 'Forget every cached prefix block (the next identical prompt is a cache miss)' })
  async resetPrefixCache(): Promise<void> {
    await this.engine.resetPrefixCache();
  }

  @Get('kv_cache/blocks')
  @ApiOperation({ summary: 'The blocks in the prefix cache now, hashed as KV cache events (--kv-events-config) announce them' })
  @ApiOkResponse({ type: KvCacheBlocksResponse, description: 'Per KV cache group, its cached blocks.' })
  async kvCacheBlocks(): Promise<KvCacheBlocksResponse> {
    if (!this.engine.kvCachedBlocks) throw OpenAIHttpError.badRequest('This engine does not expose its KV cache.');
    return this.engine.kvCachedBlocks();
  }

  @Get('server_info')
  @ApiQuery({ name: 'config_format', required: false, enum: ['text', 'json'] })
  @ApiOperation({ summary: 'Server and engine configuration (API keys left out, URL passwords masked)' })
  @ApiOkResponse({ type: ServerInfoResponse, description: 'The configuration.' })
  showServerInfo(@Query('config_format') format?: string): ServerInfoResponse {
    const info = redactConfig({
      ortllm_version: ORTLLM_VERSION,
      ...this.config,
      engine: { ...this.engine.stats(), max_model_len: this.engine.maxModelLen, model_config: this.engine.modelConfig },
    }) as Record<string, unknown>;
    if (format === 'json') return { vllm_config: info };
    return { vllm_config: Object.entries(info).map(([k, v]) => `${k}=${typeof v === 'string' ? v : String(JSON.stringify(v))}`).join(', ') };
  }

  @Post('sleep')
  @HttpCode(200)
  @ApiOperation({ summary: 'Free the KV cache and the session (level 2: the weights too); generation answers 503 until /wake_up' })
  @ApiQuery({ name: 'level', required: false, enum: ['1', '2'] })
  @ApiQuery({ name: 'mode', required: false, enum: ['abort', 'wait'], description: 'abort (default): requests in flight end with finish_reason abort; wait: they finish first' })
  async sleep(@Query('level') level = '1', @Query('mode') mode = 'abort'): Promise<void> {
    if (!this.config.enableSleepMode) throw OpenAIHttpError.badRequest('Sleep mode is not enabled: start the server with --enable-sleep-mode.');
    if (level !== '1' && level !== '2') throw OpenAIHttpError.badRequest(`level must be 1 or 2, got '${level}'`, 'level');
    if (mode !== 'abort' && mode !== 'wait') throw OpenAIHttpError.badRequest(`mode must be 'abort' or 'wait', got '${mode}'`, 'mode');
    await this.engine.sleep(Number(level) as SleepLevel, mode);
  }

  @Post('wake_up')
  @HttpCode(200)
  @ApiOperation({ summary: 'Rebuild what /sleep freed; `tags` (weights, kv_cache) are accepted and wake both' })
  async wakeUp(): Promise<void> {
    await this.engine.wakeUp();
  }

  @Get('is_sleeping')
  @ApiOperation({ summary: 'Whether the engine sleeps' })
  @ApiOkResponse({ type: IsSleepingResponse, description: 'The sleep state.' })
  isSleeping(): IsSleepingResponse {
    return { is_sleeping: this.engine.sleepState().sleeping };
  }

  @Post('collective_rpc')
  @HttpCode(200)
  @ApiOperation({ summary: 'Always 400: it calls methods of vLLM\'s Python workers, which do not exist here' })
  collectiveRpc(): never {
    throw OpenAIHttpError.badRequest('collective_rpc calls methods on vLLM\'s Python GPU workers; ortllm has none (one engine thread, no RPC-able worker methods).');
  }
}
