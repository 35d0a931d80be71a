// POST /v1/audio/transcriptions and /v1/audio/translations: multipart form in, one handler each
// branching on `stream`; the speech-to-text serving does the work.

import { Controller, HttpCode, Inject, Post, Req, Res } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiExtraModels, ApiOkResponse, ApiOperation, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { disconnectSignal } from '../../common/sse';
import type { ServerConfig } from '../../config/server-config';
import { responseIdBase } from '../../common/request-id';
import { respond } from '../../common/respond';
import type { SpeechToTextServing } from '../../serving/speech/speech-to-text-serving';
import type { SpeechToTextFields } from '../../serving/speech/speech-types';
import { SERVER_CONFIG } from '../engine/engine.tokens';
import { ApiEventStream } from '../../common/api-docs.decorators';
import { SpeechResponseDto, SpeechStreamResponseDto, SpeechVerboseResponseDto } from './dto/speech-response.dto';
import { TranscriptionRequestDto, TranslationRequestDto } from './dto/speech-request.dto';
import { readMultipartForm } from './multipart-form';
import { TRANSCRIPTION_SERVING, TRANSLATION_SERVING } from './audio.tokens';

const OK_RESPONSE = {
  description:
    'json: {text, usage} (usage: transcriptions only); verbose_json: {text, language, duration, segments}; text, srt, vtt: text/plain; ' +
    'stream: an event stream of transcription.chunk / translation.chunk objects ending with `data: [DONE]`; ' +
    "transcription chunks are also OpenAI's transcript.text.delta events, closed by one transcript.text.done.",
  content: {
    'application/json': { schema: { anyOf: [{ $ref: getSchemaPath(SpeechResponseDto) }, { $ref: getSchemaPath(SpeechVerboseResponseDto) }] } },
    'text/plain': { schema: { type: 'string' } },
  },
};

@ApiTags('audio')
@ApiExtraModels(SpeechResponseDto, SpeechVerboseResponseDto)
@Controller()
export class AudioController {
  constructor(
    @Inject(TRANSCRIPTION_SERVING) private readonly transcription: SpeechToTextServing,
    @Inject(TRANSLATION_SERVING) private readonly translation: SpeechToTextServing,
    @Inject(SERVER_CONFIG) private readonly config: ServerConfig,
  ) {}

  @Post('v1/audio/transcriptions')
  @HttpCode(200)
  @ApiOperation({ summary: 'Transcribe audio', description: 'OpenAI Transcriptions API with vLLM\'s extra parameters (speech-to-text models).' })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: TranscriptionRequestDto })
  @ApiOkResponse(OK_RESPONSE)
  @ApiEventStream(SpeechStreamResponseDto)
  async createTranscription(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const form = await readMultipartForm(request, TranscriptionRequestDto, this.limits());
    const { 'timestamp_granularities[]': granularities, ...fields } = form.fields;
    await this.serve(this.transcription, { ...fields, timestamp_granularities: granularities }, form.file, request, reply);
  }

  @Post('v1/audio/translations')
  @HttpCode(200)
  @ApiOperation({ summary: 'Translate audio to English', description: 'OpenAI Translations API with vLLM\'s extra parameters (speech-to-text models).' })
  @ApiConsumes('multipart/form-data')
  @ApiBody({ type: TranslationRequestDto })
  @ApiOkResponse(OK_RESPONSE)
  @ApiEventStream(SpeechStreamResponseDto)
  async createTranslation(@Req() request: FastifyRequest, @Res() reply: FastifyReply): Promise<void> {
    const form = await readMultipartForm(request, TranslationRequestDto, this.limits());
    await this.serve(this.translation, form.fields, form.file, request, reply);
  }

  private limits() {
    return { maxFileMb: this.config.maxAudioClipFilesizeMb, unknownFields: this.config.unknownRequestFields };
  }

  private async serve(serving: SpeechToTextServing, fields: SpeechToTextFields, file: Buffer | null, request: FastifyRequest, reply: FastifyReply): Promise<void> {
    const prepared = await serving.prepare(fields, file, responseIdBase(request, null), disconnectSignal(reply));
    await respond(reply, serving, prepared, !!fields.stream);
  }
}
