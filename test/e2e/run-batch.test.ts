// `ortllm run-batch` on a 200-line file mixing good, malformed and unsupported lines: every line
// gets a record in input order, failures become error records, and every good line's body equals
// the same request sent over HTTP to `ortllm serve` with the same flags. (Embedding lines:
// embeddings.test.ts.)

import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultTestModel, runCli } from '../helpers/server';
import { needs } from '../helpers/needs';
import { CHAT_TEMPLATE_SOURCE, postJson, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';

const onModel = needs(defaultTestModel());
const WORDS = ['Once', 'upon', 'a', 'time', 'Lily', 'saw', 'a', 'big', 'dog', 'in', 'the', 'park'];

/** A line nested 10,000 deep (far past --max-json-depth), then a good one. */
const DEEP_LINE = `{"custom_id": "req-200", "method": "POST", "url": "/v1/completions", "body": {"prompt": ${'['.repeat(10_000)}${']'.repeat(10_000)}}}`;

/** The 202 lines: 141 good (completions and chat), 61 failing in 7 ways (the 10,000-deep line is line 201). */
function batchLines(): { lines: string[]; good: Map<string, { url: string; body: any }> } {
  const lines: string[] = [];
  const good = new Map<string, { url: string; body: any }>();
  for (let i = 0; i < 200; i++) {
    const id = `req-${i}`;
    const prompt = WORDS.slice(0, 2 + (i % 10)).join(' ');
    const kind = i % 20;
    if (kind === 3) lines.push(`{"custom_id": "${id}", "method": "POST", "url": "/v1/completions", "body": {"prompt": "broken`);
    else if (kind === 7) lines.push(JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/rerank', body: { query: 'x', documents: ['y'] } }));
    else if (kind === 19) lines.push(JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/moderations', body: { input: 'x' } }));
    else if (kind === 11) lines.push(JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/completions', body: { prompt, stream: true } }));
    else if (kind === 13) lines.push(JSON.stringify({ custom_id: id, method: 'POST', url: '/v1/completions', body: { prompt, max_tokens: -1 } }));
    else if (kind === 17) lines.push(JSON.stringify({ custom_id: id, method: 'GET', url: '/v1/completions', body: {} }));
    else {
      const entry =
        i % 2 === 0
          ? { url: '/v1/completions', body: { model: 'tiny', prompt, max_tokens: 6, temperature: 0 } }
          : { url: '/v1/chat/completions', body: { model: 'tiny', messages: [{ role: 'user', content: prompt }], max_tokens: 6, temperature: 0 } };
      good.set(id, entry);
      lines.push(JSON.stringify({ custom_id: id, method: 'POST', ...entry }));
    }
  }
  lines.push(DEEP_LINE);
  const after = { url: '/v1/completions', body: { model: 'tiny', prompt: 'Once upon', max_tokens: 6, temperature: 0 } };
  good.set('req-201', after);
  lines.push(JSON.stringify({ custom_id: 'req-201', method: 'POST', ...after }));
  return { lines, good };
}

/** A response body without what differs between two runs of the same request. */
function stable(body: any): any {
  const { id: _id, created: _created, ...rest } = body;
  return rest;
}

onModel.describe('ortllm run-batch', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ortllm-batch-'));
  const template = join(dir, 'chat.jinja');
  const flags = ['--served-model-name', 'tiny', '--max-model-len', '256'];
  let s: Serving;
  let outputs: any[];
  const { lines, good } = batchLines();

  beforeAll(async () => {
    writeFileSync(template, CHAT_TEMPLATE_SOURCE);
    writeFileSync(join(dir, 'in.jsonl'), `${lines.join('\n')}\n`);
    const run = await runCli(['run-batch', '-i', join(dir, 'in.jsonl'), '-o', join(dir, 'out.jsonl'), '--model', defaultTestModel(), '--chat-template', template, ...flags]);
    expect([run.code, run.stderr.slice(-2000)]).toEqual([0, expect.stringContaining('Running batch: 100% Completed | 202/202')]);
    outputs = readFileSync(join(dir, 'out.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    s = await startServing(flags);
  }, SERVER_START_TIMEOUT_MS + 240_000);
  afterAll(() => s?.server.stop());

  it('writes one record per line, in input order, and no temporary file is left', () => {
    expect(outputs).toHaveLength(202);
    outputs.forEach((o, i) => {
      if (i % 20 !== 3 && i !== 200) expect(o.custom_id).toBe(`req-${i}`);
      expect(o.id).toMatch(/^vllm-[0-9a-f]{32}$/);
    });
    expect(readdirSync(dir).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });

  it('turns malformed, unsupported, streaming and invalid lines into error records', () => {
    const byKind = (k: number) => outputs.filter((_, i) => i < 200 && i % 20 === k);
    for (const o of byKind(3)) expect(o).toMatchObject({ custom_id: null, response: { status_code: 400, body: null }, error: expect.stringMatching(/not valid JSON/) });
    // A generation model has no rerank route: vLLM's refusal, not an unknown URL.
    for (const o of byKind(7)) expect(o).toMatchObject({ response: { status_code: 400, body: null }, error: 'The model does not support Rerank API' });
    for (const o of byKind(19)) {
      expect(o.error).toBe('URL /v1/moderations was used. Supported endpoints: /v1/chat/completions, /v1/completions, /v1/embeddings, /score, /v1/score, /rerank, /v1/rerank, /v2/rerank');
    }
    for (const o of byKind(11)) expect(o.error).toBe('Request must not be sent in stream mode');
    for (const o of byKind(13)) expect(o).toMatchObject({ response: { status_code: 400, body: null }, error: { error: { code: 400, param: 'max_tokens' } } });
    for (const o of byKind(17)) expect(o.error).toMatch(/method must be "POST"/);
    // Held to the HTTP body limits before parsing: a 400 record, not a 500 stack overflow.
    expect(outputs[200]).toMatchObject({ custom_id: null, response: { status_code: 400, body: null }, error: expect.stringMatching(/^line 201: .*--max-json-depth/) });
  });

  it("gives every good line the body the same request gets over HTTP", async () => {
    expect(outputs.filter((o) => o.error === null)).toHaveLength(good.size);
    for (const o of outputs.filter((x) => x.error === null)) {
      const { url, body } = good.get(o.custom_id)!;
      const http = await postJson(s.server.baseUrl, url, body);
      expect(o.response.status_code).toBe(200);
      expect(o.response.request_id).toMatch(/^vllm-batch-/);
      expect(stable(o.response.body)).toEqual(stable(http.json));
    }
  });

  it('exits 1 with a message on a missing input file, and writes nothing', async () => {
    const run = await runCli(['run-batch', '-i', join(dir, 'missing.jsonl'), '-o', join(dir, 'never.jsonl'), '--model', defaultTestModel()]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot read input file .*missing\.jsonl/);
    expect(existsSync(join(dir, 'never.jsonl'))).toBe(false);
  });
});
