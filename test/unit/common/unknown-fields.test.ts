// Request fields a DTO does not declare: found from the DTO metadata (nested DTOs and lists of
// them included), logged once per request at warning level by default (vLLM), refused with a
// 400 envelope under --unknown-request-fields reject, on the global pipes and on /derender,
// which validates its two body forms itself.

import { Logger } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance } from 'fastify';
import { createApp } from '../../../src/app-factory';
import { findUnknownFields } from '../../../src/common/unknown-fields';
import { resolveServerConfig, type ServerConfig } from '../../../src/config/server-config';
import { createBuiltinTokenizer } from '../../../src/model/tokenizer';
import { ChatRequestDto } from '../../../src/modules/chat/dto/chat-request.dto';
import { CompletionRequestDto } from '../../../src/modules/completions/dto/completion-request.dto';
import { DerenderCompletionRequestDto } from '../../../src/modules/derender/dto/derender-request.dto';
import { FakeEngine } from '../../helpers/fake-engine';

describe('findUnknownFields', () => {
  it('names top-level and nested fields the DTO does not declare, as dotted paths', () => {
    const body = {
      prompt: 'x',
      max_tokens: 3,
      foo_bar: 1,
      prompt_adapter_request: { name: 'x' },
      guided_json: { type: 'object' }, // a declared (deprecated) alias of structured_outputs.json
      stream_options: { include_usage: true, bogus: 1 },
      structured_outputs: { regex: 'a+', bogus: 1 },
      repetition_detection: { max_pattern_size: 4, min_pattern_size: 1, min_count: 3 },
    };
    expect(findUnknownFields(body, CompletionRequestDto)).toEqual(['foo_bar', 'prompt_adapter_request', 'stream_options.bogus', 'structured_outputs.bogus']);
  });

  it('knows inherited fields and leaves free-form values (messages, kwargs) alone', () => {
    const body = { messages: [{ role: 'user', content: 'hi', anything: 1 }], chat_template_kwargs: { x: 1 }, top_k: 5, max_completion_tokens: 4 };
    expect(findUnknownFields(body, ChatRequestDto)).toEqual([]);
  });

  it('walks lists of nested DTOs', () => {
    const body = {
      generate_responses: [
        { request_id: 'a', choices: [{ index: 0, token_ids: [1] }] },
        { request_id: 'b', choices: [{ index: 0, token_ids: [1], extra: true }], stray: 1 },
      ],
    };
    expect(findUnknownFields(body, DerenderCompletionRequestDto)).toEqual(['generate_responses.1.choices.0.extra', 'generate_responses.1.stray']);
  });
});

const tokenizer = createBuiltinTokenizer();

async function build(flags: Partial<ServerConfig>): Promise<{ app: NestFastifyApplication; fastify: FastifyInstance }> {
  const config = resolveServerConfig(
    { model: '/models/tiny.gguf', servedModelNames: ['tiny'], disableUvicornAccessLog: true, logLevel: 'warning', enableScaleOut: true, ...flags },
    {},
  );
  const app = await createApp(config, { engine: new FakeEngine({ tokenizer, script: [...Buffer.from('Once upon a time')] }) });
  await app.init();
  const fastify = app.getHttpAdapter().getInstance();
  await fastify.ready();
  return { app, fastify };
}

const post = (fastify: FastifyInstance, url: string, payload: object) => fastify.inject({ method: 'POST', url, payload });

describe('unknown request fields over HTTP', () => {
  afterEach(() => jest.restoreAllMocks());

  it('are logged once per request at warning level with their names, and the request is served (default)', async () => {
    const { app, fastify } = await build({});
    const warn = jest.spyOn(Logger.prototype, 'warn').mockImplementation(() => undefined);
    try {
      const res = await post(fastify, '/v1/completions', { prompt: 'Once', max_tokens: 2, foo_bar: 1, prompt_adapter_request: {} });
      expect(res.statusCode).toBe(200);
      const lines = warn.mock.calls.map((call) => String(call[0])).filter((line) => line.includes('ignored'));
      expect(lines).toEqual(['The following fields were present in the request but ignored: foo_bar, prompt_adapter_request']);

      warn.mockClear();
      expect((await post(fastify, '/v1/completions', { prompt: 'Once', max_tokens: 2 })).statusCode).toBe(200);
      expect(warn.mock.calls.filter((call) => String(call[0]).includes('ignored'))).toEqual([]);
    } finally {
      await app.close();
    }
  });

  it('are refused with a 400 envelope naming them under --unknown-request-fields reject, derender included', async () => {
    const { app, fastify } = await build({ unknownRequestFields: 'reject' });
    try {
      const res = await post(fastify, '/v1/completions', { prompt: 'Once', max_tokens: 2, foo_bar: 1, stream_options: { bogus: true } });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        error: {
          message: '2 validation errors:\n  foo_bar: Extra inputs are not permitted\n  stream_options.bogus: Extra inputs are not permitted',
          type: 'Bad Request',
          param: 'foo_bar',
          code: 400,
        },
      });
      const derender = await post(fastify, '/v1/completions/derender', {
        generate_responses: [{ request_id: 'generate-tokens-1', choices: [{ index: 0, token_ids: [72], finish_reason: 'length', extra: 1 }] }],
      });
      expect(derender.statusCode).toBe(400);
      expect(derender.json().error.param).toBe('generate_responses.0.choices.0.extra');
      expect((await post(fastify, '/v1/completions', { prompt: 'Once', max_tokens: 2 })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
