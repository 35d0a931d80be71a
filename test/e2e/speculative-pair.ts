// Two real servers on the same model, one with --speculative-config (prompt lookup) and one
// without, and the checks that their answers agree: token ids, text, finish and stop reasons
// exactly, logprobs within LOGPROB_TOLERANCE (a verification pass computes a position among
// several rows, a plain decode alone).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { startServer, type TestServer } from '../helpers/server';

export const NGRAM_CONFIG = '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":3,"prompt_lookup_min":1}';
export const LOGPROB_TOLERANCE = 1e-5;
/** stories260K has no chat template of its own. */
const CHAT_TEMPLATE = "{% for m in messages %}{{ m['content'] }}\n{% endfor %}";

export interface Side {
  server: TestServer;
  client: OpenAI;
  post(path: string, body: unknown): Promise<any>;
  metrics(): Promise<string>;
}

export interface Pair {
  plain: Side;
  spec: Side;
  dir: string;
  stop(): Promise<void>;
}

/** Starts both servers (one after the other: the machine is small) with the same flags. */
export async function startPair(model: string, flags: string[], env: NodeJS.ProcessEnv = {}): Promise<Pair> {
  const dir = mkdtempSync(join(tmpdir(), 'ortllm-spec-e2e-'));
  const template = join(dir, 'chat.jinja');
  writeFileSync(template, CHAT_TEMPLATE);
  const common = ['--served-model-name', 'stories', '--chat-template', template, ...flags];
  const side = async (extra: string[]): Promise<Side> => {
    const server = await startServer([...common, ...extra], { model, env });
    const client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
    return {
      server,
      client,
      post: async (path, body) => {
        const res = await fetch(`${server.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
        const json = await res.json();
        if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
        return json;
      },
      metrics: async () => (await fetch(`${server.baseUrl}/metrics`)).text(),
    };
  };
  const plain = await side([]);
  const spec = await side(['--speculative-config', NGRAM_CONFIG]);
  return {
    plain,
    spec,
    dir,
    stop: async () => {
      await Promise.all([plain.server.stop(), spec.server.stop()]);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Fields that differ between any two responses (ids, clocks) and say nothing about the output. */
const VOLATILE = new Set(['id', 'created', 'created_at', 'completed_at', 'system_fingerprint', 'response_id', 'item_id', 'request_id']);

/**
 * Asserts that two answers agree: every field equal, except volatile ones, and numbers under a
 * key that names a logprob, which may differ by `tolerance`. Returns the paths compared
 * with a tolerance (so a test can see that logprobs were there).
 */
export function expectSameOutput(spec: unknown, plain: unknown, tolerance = LOGPROB_TOLERANCE, path = '$'): number {
  if (typeof plain === 'number' && typeof spec === 'number' && /logprob/i.test(path) && Number.isFinite(plain)) {
    if (Math.abs(spec - plain) > tolerance) throw new Error(`${path}: ${spec} (speculative) vs ${plain} (plain)`);
    return 1;
  }
  if (plain === null || typeof plain !== 'object' || spec === null || typeof spec !== 'object') {
    if (!Object.is(spec, plain)) throw new Error(`${path}: ${JSON.stringify(spec)} (speculative) vs ${JSON.stringify(plain)} (plain)`);
    return 0;
  }
  if (Array.isArray(plain) !== Array.isArray(spec)) throw new Error(`${path}: array vs object`);
  const keys = new Set([...Object.keys(plain), ...Object.keys(spec)].filter((k) => !VOLATILE.has(k)));
  let compared = 0;
  for (const key of keys) {
    compared += expectSameOutput((spec as Record<string, unknown>)[key], (plain as Record<string, unknown>)[key], tolerance, `${path}.${key}`);
  }
  if (Array.isArray(plain) && plain.length !== (spec as unknown[]).length) throw new Error(`${path}: length ${(spec as unknown[]).length} vs ${plain.length}`);
  return compared;
}

/** A counter's value summed over its samples whose labels contain `labelMatch`. */
export function counter(metrics: string, name: string, labelMatch = ''): number {
  let sum = 0;
  for (const line of metrics.split('\n')) {
    if (!line.startsWith(name) || (line[name.length] !== '{' && line[name.length] !== ' ')) continue;
    if (labelMatch && !line.includes(labelMatch)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}
