// POST /v1/load_lora_adapter and /v1/unload_lora_adapter (vLLM's runtime LoRA updating): plain-text
// success bodies as vLLM sends them, vLLM's error envelopes otherwise. Registered only with
// VLLM_ALLOW_RUNTIME_LORA_UPDATING; behind the API key like every /v1 route.

import { Body, Controller, Header, HttpCode, Inject, Post } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiProduces, ApiTags } from '@nestjs/swagger';
import { ApiBodyExample } from '../../common/api-docs.decorators';
import type { ServedModels } from '../../serving/lora/served-models';
import { SERVED_MODELS } from '../engine/engine.tokens';
import { LoadLoraAdapterDto, UnloadLoraAdapterDto } from './dto/lora-adapter-requests.dto';

const PLAIN_TEXT = 'text/plain; charset=utf-8';

@ApiTags('lora')
@Controller('v1')
export class LoraAdaptersController {
  constructor(@Inject(SERVED_MODELS) private readonly models: ServedModels) {}

  @Post('load_lora_adapter')
  @HttpCode(200)
  @Header('content-type', PLAIN_TEXT)
  @ApiOperation({
    summary: 'Load a LoRA adapter',
    description: 'Loads and checks the adapter; requests then name it in `model`. 400: already loaded (without load_inplace), or the adapter cannot be served (the message says why); 404: nothing at lora_path.',
  })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: "Success: LoRA adapter '<name>' added successfully.", schema: { type: 'string' } })
  @ApiBodyExample({ lora_name: 'sql-lora', lora_path: '/adapters/sql-lora' })
  loadLoraAdapter(@Body() body: LoadLoraAdapterDto): Promise<string> {
    return this.models.load(body);
  }

  @Post('unload_lora_adapter')
  @HttpCode(200)
  @Header('content-type', PLAIN_TEXT)
  @ApiOperation({ summary: 'Unload a LoRA adapter', description: 'Requests naming it get 404 from then on; requests already running finish with it. 404: no adapter of that name.' })
  @ApiProduces('text/plain')
  @ApiOkResponse({ description: "Success: LoRA adapter '<name>' removed successfully.", schema: { type: 'string' } })
  @ApiBodyExample({ lora_name: 'sql-lora' })
  unloadLoraAdapter(@Body() body: UnloadLoraAdapterDto): Promise<string> {
    return this.models.unload(body);
  }
}
