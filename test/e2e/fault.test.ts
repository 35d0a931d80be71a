// Faults under load on the real server (stories260K, --max-num-seqs 16 so requests queue): a
// warm-up round and three rounds of 600 mixed requests at concurrency 48 — greedy completions and chats (streamed and
// not), clients that abort mid-stream, clients that disconnect before the answer, malformed
// bodies. Every greedy request that completes answers exactly what it answers alone; after each
// round nothing is left running or waiting and the KV cache is empty; and the server's memory
// does not grow across the three rounds after the warm-up (RSS read after a full garbage
// collection, asked for through the inspector: without it RSS follows when V8 last collected, not
// what is still held; the warm-up round's first-time allocations are not a leak).

import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { needs } from '../helpers/needs';
import { waitFor } from '../helpers/wait';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';

const ROUNDS = 3;
const REQUESTS_PER_ROUND = 600;
const CONCURRENCY = 48;
const PROMPTS = [
  'Once upon a time',
  'The little dog',
  'Lily and Ben went to the park',
  'One day, a big bird',
  'Tom had a red ball',
  'The sun was hot and',
  'There was a girl named Sue',
  'In the forest, a bear',
];

/** A deterministic generator, so every run sends the same mix. */
function mulberry32(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Kind = 'completion' | 'completion-stream' | 'chat' | 'chat-stream';

interface GreedySpec {
  kind: Kind;
  prompt: string;
  maxTokens: number;
}

function greedyBody(spec: GreedySpec): { path: string; body: Record<string, unknown> } {
  const common = { max_tokens: spec.maxTokens, temperature: 0, stream: spec.kind.endsWith('-stream') };
  return spec.kind.startsWith('chat')
    ? { path: '/v1/chat/completions', body: { ...common, messages: [{ role: 'user', content: spec.prompt }] } }
    : { path: '/v1/completions', body: { ...common, prompt: spec.prompt } };
}

/** The generated text of a response, JSON or SSE; null when it did not complete normally. */
function textOf(kind: Kind, raw: string): { text: string; finish: string } | null {
  if (!kind.endsWith('-stream')) {
    const json = JSON.parse(raw);
    const choice = json.choices[0];
    return { text: kind === 'chat' ? choice.message.content : choice.text, finish: choice.finish_reason };
  }
  if (!raw.trimEnd().endsWith('data: [DONE]')) return null;
  let text = '';
  let finish = '';
  for (const line of raw.split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const chunk = JSON.parse(line.slice(6));
    if (chunk.error) return null;
    for (const choice of chunk.choices ?? []) {
      text += kind === 'chat-stream' ? (choice.delta?.content ?? '') : choice.text;
      if (choice.finish_reason) finish = choice.finish_reason;
    }
  }
  return { text, finish };
}

async function post(serving: Serving, path: string, body: string, signal?: AbortSignal): Promise<{ status: number; text: string }> {
  const res = await fetch(`${serving.server.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal });
  return { status: res.status, text: await res.text() };
}

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/**
 * A full garbage collection in the server's main thread and its worker threads (the engine, the
 * text workers), through its inspector (NodeWorker reaches the workers). Run from a child process:
 * Node 20 has a WebSocket client only behind a flag.
 */
async function collectGarbage(serving: Serving): Promise<void> {
  const url = /Debugger listening on (ws:\/\/\S+)/.exec(serving.server.output())?.[1];
  if (!url) throw new Error('the server printed no inspector URL');
  const script = `
    const ws = new WebSocket(process.argv[1]);
    const GC = JSON.stringify({ id: 1, method: 'HeapProfiler.collectGarbage' });
    const sessions = new Set();
    let pending = 0;
    const send = (id, method, params) => ws.send(JSON.stringify({ id, method, params }));
    const finish = () => { if (pending === 0) send(3, 'HeapProfiler.collectGarbage'); };
    ws.onopen = () => send(1, 'NodeWorker.enable', { waitForDebuggerOnStart: false });
    ws.onmessage = (m) => {
      const msg = JSON.parse(m.data);
      if (msg.method === 'NodeWorker.attachedToWorker') sessions.add(msg.params.sessionId);
      else if (msg.id === 1) setTimeout(() => {
        // Every worker attached by now: collect in each, then in the main thread.
        pending = sessions.size;
        for (const sessionId of sessions) send(2, 'NodeWorker.sendMessageToWorker', { sessionId, message: GC });
        finish();
      }, 300);
      else if (msg.method === 'NodeWorker.receivedMessageFromWorker' && JSON.parse(msg.params.message).id === 1) {
        pending--;
        finish();
      } else if (msg.id === 3) process.exit(0);
    };
    ws.onerror = () => process.exit(1);`;
  await promisify(execFile)(process.execPath, ['--experimental-websocket', '--no-warnings', '-e', script, url], { timeout: 30_000 });
}

needs(defaultTestModel()).describe('faults under load', () => {
  let serving: Serving;
  beforeAll(async () => {
    // The inspector on a free loopback port, only to ask for a garbage collection before each RSS reading.
    serving = await startServing(['--max-num-seqs', '16'], { env: { NODE_OPTIONS: '--inspect=127.0.0.1:0' } });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => serving?.server.stop());

  it(`a warm-up and ${ROUNDS} rounds of ${REQUESTS_PER_ROUND} mixed requests at concurrency ${CONCURRENCY}: greedy outputs as alone, nothing left behind, memory flat`, async () => {
    const kinds: Kind[] = ['completion', 'completion-stream', 'chat', 'chat-stream'];
    const specs: GreedySpec[] = PROMPTS.flatMap((prompt, i) => kinds.map((kind, k) => ({ kind, prompt, maxTokens: 6 + ((i * 4 + k) % 14) })));
    // Each greedy request alone, one at a time: the reference.
    const solo = new Map<GreedySpec, { text: string; finish: string }>();
    for (const spec of specs) {
      const { path, body } = greedyBody(spec);
      const reply = await post(serving, path, JSON.stringify(body));
      expect(reply.status).toBe(200);
      solo.set(spec, textOf(spec.kind, reply.text)!);
    }

    const rss: number[] = [];
    // Round 0 is the warm-up; every round is checked the same way.
    for (let round = 0; round <= ROUNDS; round++) {
      const random = mulberry32(1000 + round);
      const tally = { matched: 0, aborted: 0, disconnected: 0, malformed: 0 };
      const jobs = Array.from({ length: REQUESTS_PER_ROUND }, () => random());
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < jobs.length) {
          const roll = jobs[next++];
          const spec = specs[Math.floor(roll * 1e6) % specs.length];
          const { path, body } = greedyBody(spec);
          if (roll < 0.6) {
            const reply = await post(serving, path, JSON.stringify(body));
            expect([spec, reply.status]).toEqual([spec, 200]);
            expect([spec, textOf(spec.kind, reply.text)]).toEqual([spec, solo.get(spec)]);
            tally.matched++;
          } else if (roll < 0.75) {
            // Aborts mid-stream, after the first chunk.
            const controller = new AbortController();
            const res = await fetch(`${serving.server.baseUrl}${path}`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify({ ...body, stream: true, max_tokens: 60, ignore_eos: true }),
              signal: controller.signal,
            });
            const reader = res.body!.getReader();
            await reader.read();
            controller.abort();
            await reader.read().catch(() => undefined);
            tally.aborted++;
          } else if (roll < 0.88) {
            // Disconnects before the answer comes.
            const controller = new AbortController();
            setTimeout(() => controller.abort(), 2 + Math.floor(roll * 1000) % 40);
            await post(serving, path, JSON.stringify({ ...body, max_tokens: 40, stream: false }), controller.signal).catch(() => undefined);
            tally.disconnected++;
          } else {
            const malformed = [
              `{"prompt": "${spec.prompt}", "max_tokens": `,
              JSON.stringify({ prompt: spec.prompt, max_tokens: 'many' }),
              JSON.stringify({ ...body, model: 'no-such-model' }),
              JSON.stringify({ ...body, max_tokens: 1e9 }),
              JSON.stringify({ messages: 'not a list' }),
            ][Math.floor(roll * 1e4) % 5];
            const reply = await post(serving, path, malformed);
            expect([malformed, reply.status >= 400 && reply.status < 500]).toEqual([malformed, true]);
            expect(JSON.parse(reply.text).error.code).toBe(reply.status);
            tally.malformed++;
          }
        }
      };
      await Promise.all(Array.from({ length: CONCURRENCY }, worker));
      expect(tally.matched).toBeGreaterThan(REQUESTS_PER_ROUND / 2);
      // Aborted and disconnected requests release everything: the engine goes idle and empty.
      await waitFor(
        async () =>
          (await serving.metric('vllm:num_requests_running')) === 0 &&
          (await serving.metric('vllm:num_requests_waiting')) === 0 &&
          (await serving.metric('vllm:kv_cache_usage_perc')) === 0,
        30_000,
        `an idle engine with an empty KV cache after round ${round}`,
      );
      await collectGarbage(serving);
      rss.push(rssBytes(serving.server.child.pid!));
    }
    // The rounds after the warm-up must not keep adding to what it left.
    const growth = (rss[ROUNDS] - rss[0]) / rss[0];
    console.log(`server RSS after the warm-up and each round (MiB): ${rss.map((b) => (b / 2 ** 20).toFixed(0)).join(', ')}; growth ${(growth * 100).toFixed(1)}%`);
    expect(growth).toBeLessThan(0.1);
  }, 600_000);
});
