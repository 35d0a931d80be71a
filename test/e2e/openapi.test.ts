// The OpenAPI contract as generated-client users and spec tooling meet it:
// (1) `npm run openapi` regenerates exactly openapi/openapi.json;
// (2) the committed spec and the spec served with default flags, --enable-scale-out and
//     --tokens-only pass @apidevtools/swagger-parser validation and @redocly/cli lint
//     (redocly.yaml: no error, and no warning from a rule it does not keep);
// (3) every request body example in a served spec succeeds against its server as it stands, and
//     every answer (JSON, or each SSE frame with `stream: true`) matches its documented schema;
// (4) two independent generators (openapi-typescript + openapi-fetch, @hey-api/openapi-ts), run with
//     their default options (the commands of docs/generated-clients.md), build
//     clients from the committed spec that compile with tsc --strict and call a live server,
//     streaming included. The three servers start once and serve every test of the file.

import Ajv from 'ajv';
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { defaultTestModel, ensureBuilt, REPO_ROOT, SERVER_START_TIMEOUT_MS, startServer, TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';
import { anySseFrames } from './completions-helpers';

const SPEC = join(REPO_ROOT, 'openapi/openapi.json');
const WORK_DIR = join(REPO_ROOT, 'dist/e2e-openapi');
const API_KEY = 'spec-key';
const MODEL_NAME = 'stories';
const CHAT_TEMPLATE = '{% for m in messages %}{{ m.content }} {% endfor %}';
const model = defaultTestModel();

type Json = Record<string, any>;

function run(args: string[]): { status: number | null; output: string; stdout: string } {
  const result = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 240_000, maxBuffer: 64 * 2 ** 20 });
  return { status: result.status, output: `${result.stdout}${result.stderr}`, stdout: result.stdout };
}

const bin = (path: string): string => join(REPO_ROOT, 'node_modules', path);

/** Validates each file given with @apidevtools/swagger-parser (an ES module: run by node, outside jest). */
const SWAGGER_PARSER_VALIDATE = `
const SwaggerParser = require('@apidevtools/swagger-parser');
(async () => {
  for (const file of process.argv.slice(1)) {
    await SwaggerParser.validate(file).then(() => console.log('valid', file), (err) => console.log('INVALID', file, err.message));
  }
})();`;

describe('OpenAPI spec', () => {
  beforeAll(async () => {
    await ensureBuilt();
    mkdirSync(WORK_DIR, { recursive: true });
  }, SERVER_START_TIMEOUT_MS);

  it('is in sync with the code (run `npm run openapi` and commit when this fails)', () => {
    const fresh = join(WORK_DIR, 'openapi.json');
    const result = run([join(REPO_ROOT, 'dist/src/cli/write-openapi.js'), fresh]);
    expect(result.status).toBe(0);
    const committed = readFileSync(SPEC, 'utf8');
    const regenerated = readFileSync(fresh, 'utf8');
    if (regenerated !== committed) {
      const a = committed.split('\n');
      const b = regenerated.split('\n');
      const first = a.findIndex((line, i) => line !== b[i]);
      throw new Error(`openapi/openapi.json is stale (first difference at line ${first + 1}):\n- ${a[first]}\n+ ${b[first]}\nRun \`npm run openapi\`.`);
    }
  }, 120_000);
});

/** The flags of each served spec under test (all with the API key and the served name). */
const SERVED: Record<string, string[]> = {
  default: ['--chat-template', CHAT_TEMPLATE],
  'enable-scale-out': ['--enable-scale-out', '--chat-template', CHAT_TEMPLATE],
  'tokens-only': ['--tokens-only'],
};

needs(model).describe('committed and served specs, and clients generated from them', () => {
  const servers: Record<string, TestServer> = {};
  const specs: Record<string, Json> = {};
  const auth = { authorization: `Bearer ${API_KEY}` };

  beforeAll(async () => {
    await Promise.all(
      Object.entries(SERVED).map(async ([name, flags]) => {
        servers[name] = await startServer(['--api-key', API_KEY, '--served-model-name', MODEL_NAME, ...flags]);
        specs[name] = (await (await fetch(`${servers[name].baseUrl}/openapi.json`)).json()) as Json;
      }),
    );
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await Promise.all(Object.values(servers).map((server) => server.stop()));
  });

  it('the committed and served specs pass swagger-parser validation and redocly lint', async () => {
    const files = [SPEC];
    for (const [name, spec] of Object.entries(specs)) {
      expect(spec.servers).toEqual([{ url: servers[name].baseUrl }]);
      files.push(join(WORK_DIR, `served-${name}.json`));
      writeFileSync(files[files.length - 1], JSON.stringify(spec));
    }
    const validation = run(['-e', SWAGGER_PARSER_VALIDATE, ...files]);
    expect(validation.output.trim().split('\n')).toEqual(files.map((file) => `valid ${file}`));

    const lint = run([bin('@redocly/cli/bin/cli.js'), 'lint', '--config', join(REPO_ROOT, 'redocly.yaml'), '--format=json', ...files]);
    // One JSON report per file, one after the other.
    const reports = JSON.parse(`[${lint.stdout.slice(lint.stdout.indexOf('{')).replace(/\}\s*\{(?=\s*"totals")/g, '},{')}]`) as {
      problems: { ruleId: string; severity: string; message: string }[];
    }[];
    expect(reports).toHaveLength(files.length);
    const config = parseYaml(readFileSync(join(REPO_ROOT, 'redocly.yaml'), 'utf8')) as { rules: Record<string, string> };
    const keptWarnings = Object.keys(config.rules).filter((rule) => config.rules[rule] === 'warn');
    const unexpected = reports.flatMap((report) => report.problems).filter((p) => p.severity === 'error' || !keptWarnings.includes(p.ruleId));
    expect(unexpected.map((p) => `${p.severity} ${p.ruleId}: ${p.message}`)).toEqual([]);
    expect(lint.status).toBe(0);
  }, 120_000);

  it('every body example succeeds as it stands, and every answer and SSE frame matches its schema', async () => {
    let checked = 0;
    for (const [name, spec] of Object.entries(specs)) {
      const ajv = new Ajv({ strict: false, allErrors: true });
      ajv.addSchema(spec, 'spec');
      /** Checks `value` against the schema at `pointer` in the spec (so the schema's own $refs resolve). */
      const conforms = (pointer: string[], value: unknown, what: string): void => {
        const validate = ajv.compile({ $ref: `spec#/${pointer.map((key) => key.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}` });
        expect([what, validate(value) ? [] : validate.errors]).toEqual([what, []]);
      };
      for (const [path, item] of Object.entries(spec.paths as Json)) {
        for (const [method, operation] of Object.entries(item as Json)) {
          const example = operation.requestBody?.content?.['application/json']?.example as Json | undefined;
          if (!example) continue;
          const what = `${name}: ${method.toUpperCase()} ${path}`;
          if ('model' in example) expect([what, example.model]).toEqual([what, MODEL_NAME]);
          const res = await fetch(`${servers[name].baseUrl}${path}`, {
            method: method.toUpperCase(),
            headers: { 'content-type': 'application/json', ...auth },
            body: JSON.stringify(example),
          });
          const text = await res.text();
          expect([what, res.status, res.status === 200 ? '' : text]).toEqual([what, 200, '']);
          const ok = operation.responses['200'].content;
          const at = (mediaType: string) => ['paths', path, method, 'responses', '200', 'content', mediaType, 'schema'];
          if (ok?.['application/json']) conforms(at('application/json'), JSON.parse(text), what);
          checked++;

          if (!operation.responses['200']['x-event-stream']) continue;
          const streamed = await fetch(`${servers[name].baseUrl}${path}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json', ...auth },
            body: JSON.stringify({ ...example, stream: true, stream_options: { include_usage: true } }),
          });
          expect([what, streamed.headers.get('content-type')]).toEqual([what, expect.stringContaining('text/event-stream')]);
          const frames = anySseFrames(await streamed.text());
          expect(frames.length).toBeGreaterThan(1);
          const frameSchema = ['paths', path, method, 'responses', '200', 'x-event-stream', 'schema'];
          for (const frame of frames) conforms(frameSchema, frame, `${what} (stream)`);
        }
      }
    }
    // default: completions, chat, batch, responses, tokenize, detokenize, invocations; scale-out:
    // the same + generate, abort, render ×2, derender ×2; tokens-only: generate, abort, legacy abort.
    expect(checked).toBe(7 + 13 + 3);
  }, 180_000);

  it('logs the request fields it ignores, once per request at warning level, by name', async () => {
    const example = specs.default.paths['/v1/completions'].post.requestBody.content['application/json'].example as Json;
    const before = servers.default.output().length;
    const res = await fetch(`${servers.default.baseUrl}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...auth },
      body: JSON.stringify({ ...example, foo_bar: 1, prompt_adapter_request: { name: 'x' } }),
    });
    expect(res.status).toBe(200);
    const lines = servers.default.output().slice(before).split('\n').filter((line) => line.includes('ignored'));
    expect(lines).toEqual([expect.stringMatching(/WARN .*The following fields were present in the request but ignored: foo_bar, prompt_adapter_request$/)]);
  });

  it('two generators build clients that compile with tsc --strict and call the server, streaming included', async () => {
    const out = join(WORK_DIR, 'clients');
    rmSync(out, { recursive: true, force: true });
    mkdirSync(out, { recursive: true });
    // Both generators with their default options: the commands docs/generated-clients.md gives.
    const typescript = run([bin('openapi-typescript/bin/cli.js'), 'openapi/openapi.json', '--output', join(out, 'openapi-typescript/ortllm-api.d.ts')]);
    expect(typescript.status).toBe(0);
    const heyApi = run([bin('@hey-api/openapi-ts/bin/run.js'), '-i', './openapi/openapi.json', '-o', join(out, 'hey-api'), '--no-log-file', '--silent']);
    expect([heyApi.status, heyApi.status === 0 ? '' : heyApi.output]).toEqual([0, '']);
    // The SSE frame types are part of what openapi-typescript generates.
    expect(readFileSync(join(out, 'openapi-typescript/ortllm-api.d.ts'), 'utf8')).toContain('CompletionStreamResponse: {');

    writeFileSync(join(out, 'use-openapi-fetch.ts'), OPENAPI_FETCH_CLIENT);
    writeFileSync(join(out, 'use-hey-api.ts'), HEY_API_CLIENT);
    const typecheck = run([
      bin('typescript/bin/tsc'),
      '--noEmit', '--strict', '--target', 'ES2022', '--module', 'commonjs', '--moduleResolution', 'node',
      '--esModuleInterop', '--skipLibCheck', '--types', 'node', '--lib', 'ES2022,DOM,DOM.Iterable',
      join(out, 'use-openapi-fetch.ts'),
      join(out, 'use-hey-api.ts'),
    ]);
    expect(typecheck.output).toBe('');
    expect(typecheck.status).toBe(0);

    const server = servers['enable-scale-out'];
    type Use = (baseUrl: string, apiKey: string, model: string) => Promise<Json>;
    const { useOpenapiFetch } = (await import(join(out, 'use-openapi-fetch.ts'))) as { useOpenapiFetch: Use };
    const { useHeyApi } = (await import(join(out, 'use-hey-api.ts'))) as { useHeyApi: Use };
    for (const use of [useOpenapiFetch, useHeyApi]) {
      const result = await use(server.baseUrl, API_KEY, MODEL_NAME);
      expect(result).toEqual({
        ids: [MODEL_NAME],
        completion: { status: 200, model: MODEL_NAME, text: expect.stringMatching(/\S/) },
        chat: { status: 200, content: expect.stringMatching(/\S/) },
        streamedCompletion: { frames: expect.any(Number), text: result.completion.text },
        streamedChat: { frames: expect.any(Number), content: result.chat.content },
        unknownModel: { status: 404, message: `The model \`nope\` does not exist. Served model names: \`${MODEL_NAME}\`.` },
        unauthorized: 401,
      });
      expect(result.streamedCompletion.frames).toBeGreaterThan(1);
    }
  }, 240_000);
});

/** openapi-typescript + openapi-fetch, default options: typed paths; the SSE frame types are components (x-event-stream names them). */
const OPENAPI_FETCH_CLIENT = `
import createClient from 'openapi-fetch';
import type { components, paths } from './openapi-typescript/ortllm-api';

type CompletionFrame = components['schemas']['CompletionStreamResponse'];
type ChatFrame = components['schemas']['ChatCompletionStreamResponse'];

/** The JSON data frames of an SSE body, up to data: [DONE]. */
async function* frames<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const bytes of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(bytes, { stream: true });
    let end: number;
    while ((end = buffer.indexOf('\\n\\n')) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      if (!event.startsWith('data: ')) continue;
      if (event === 'data: [DONE]') return;
      yield JSON.parse(event.slice(6)) as T;
    }
  }
}

export async function useOpenapiFetch(baseUrl: string, apiKey: string, model: string) {
  // Streams are read raw (parseAs: 'stream') and typed by their frame schema.
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${apiKey}\` } });
  const models = await client.GET('/v1/models');
  const ids: string[] = models.data?.data.map((card) => card.id) ?? [];

  const request = { model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0 };
  const completion = await client.POST('/v1/completions', { body: request });
  const messages = [{ role: 'user' as const, content: 'Once upon a time' }];
  const chat = await client.POST('/v1/chat/completions', { body: { model, messages, max_completion_tokens: 8, temperature: 0 } });

  const completionStream = await client.POST('/v1/completions', { body: { ...request, stream: true }, parseAs: 'stream' });
  const streamedCompletion = { frames: 0, text: '' };
  for await (const frame of frames<CompletionFrame>(completionStream.data!)) {
    streamedCompletion.frames++;
    streamedCompletion.text += frame.choices[0]?.text ?? '';
  }
  const chatStream = await client.POST('/v1/chat/completions', {
    body: { model, messages, max_completion_tokens: 8, temperature: 0, stream: true },
    parseAs: 'stream',
  });
  const streamedChat = { frames: 0, content: '' };
  for await (const frame of frames<ChatFrame>(chatStream.data!)) {
    streamedChat.frames++;
    streamedChat.content += frame.choices[0]?.delta.content ?? '';
  }

  const unknown = await client.POST('/v1/completions', { body: { ...request, model: 'nope' } });
  const envelope = unknown.error && typeof unknown.error.error === 'object' ? unknown.error.error : null;
  const unauthorized = await createClient<paths>({ baseUrl }).GET('/v1/models');
  return {
    ids,
    completion: { status: completion.response.status, model: completion.data?.model, text: completion.data?.choices[0].text },
    chat: { status: chat.response.status, content: chat.data?.choices[0].message.content },
    streamedCompletion,
    streamedChat,
    unknownModel: { status: unknown.response.status, message: envelope?.message },
    unauthorized: unauthorized.response.status,
  };
}
`;

/** @hey-api/openapi-ts (fetch client): one function per operationId; streaming through its SSE client and the generated frame types. */
const HEY_API_CLIENT = `
import { createClient, createConfig } from './hey-api/client';
import { createChatCompletion, createCompletion, showAvailableModels } from './hey-api/sdk.gen';
import type { ChatCompletionStreamResponse, CompletionStreamResponse } from './hey-api/types.gen';

export async function useHeyApi(baseUrl: string, apiKey: string, model: string) {
  const client = createClient(createConfig({ baseUrl, headers: { Authorization: \`Bearer \${apiKey}\` } }));
  const models = await showAvailableModels({ client });
  const ids: string[] = models.data?.data.map((card) => card.id) ?? [];

  const request = { model, prompt: 'Once upon a time', max_tokens: 8, temperature: 0 };
  const completion = await createCompletion({ client, body: request });
  const messages = [{ role: 'user' as const, content: 'Once upon a time' }];
  const chat = await createChatCompletion({ client, body: { model, messages, max_completion_tokens: 8, temperature: 0 } });

  const streamOptions = { headers: { 'Content-Type': 'application/json' }, sseMaxRetryAttempts: 1 };
  const completionStream = await client.sse.post<{ 200: CompletionStreamResponse }>({ url: '/v1/completions', body: { ...request, stream: true }, ...streamOptions });
  const streamedCompletion = { frames: 0, text: '' };
  for await (const frame of completionStream.stream) {
    if ((frame as unknown) === '[DONE]') break;
    streamedCompletion.frames++;
    streamedCompletion.text += frame.choices[0]?.text ?? '';
  }
  const chatStream = await client.sse.post<{ 200: ChatCompletionStreamResponse }>({
    url: '/v1/chat/completions',
    body: { model, messages, max_completion_tokens: 8, temperature: 0, stream: true },
    ...streamOptions,
  });
  const streamedChat = { frames: 0, content: '' };
  for await (const frame of chatStream.stream) {
    if ((frame as unknown) === '[DONE]') break;
    streamedChat.frames++;
    streamedChat.content += frame.choices[0]?.delta.content ?? '';
  }

  const unknown = await createCompletion({ client, body: { ...request, model: 'nope' } });
  const envelope = unknown.error && typeof unknown.error.error === 'object' ? unknown.error.error : null;
  const unauthorized = await showAvailableModels({ client: createClient(createConfig({ baseUrl })) });
  return {
    ids,
    completion: { status: completion.response.status, model: completion.data?.model, text: completion.data?.choices[0].text },
    chat: { status: chat.response.status, content: chat.data?.choices[0].message.content },
    streamedCompletion,
    streamedChat,
    unknownModel: { status: unknown.response.status, message: envelope?.message },
    unauthorized: unauthorized.response.status,
  };
}
`;
