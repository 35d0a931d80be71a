// What the Gateway API Inference Extension's endpoint picker reads from a replica, read the way
// it reads it: /metrics is parsed by the picker's own parser (prometheus/common expfmt, built
// from Debian's Go packages, test/fixtures/epp-metrics) and reduced by the model-server
// protocol's rules. Idle, the queue sizes and KV usage are 0 and the cache info carries the
// flags' block size and block count; with one batch slot and three requests on an adapter, the
// picker sees one running, two waiting, KV in use and the adapter both running and waiting.

import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { llamaConfig } from '../../bench/random-llama';
import { LORA_MODULES } from '../../src/model/lora/lora-weights';
import { writeRandomPeftAdapter } from '../../src/model/lora/write-adapter';
import { buildGoTool, debianGoPackage, GO_BINARY } from '../helpers/go-tool';
import { needs } from '../helpers/needs';
import { defaultTestModel, REPO_ROOT, SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';
import { waitFor } from '../helpers/wait';
import { hfConfigJson, writeDecoderHfDir } from '../helpers/write-decoder-files';

const STORIES = defaultTestModel();
const SCRAPER_DIR = join(REPO_ROOT, 'test', 'fixtures', 'epp-metrics');
const BLOCKS = 700;
/** Seeded random weights (stories260K's vocabulary) wide enough that 1,000 tokens take seconds, so the queue can be seen. */
const SLOW_DECODER = llamaConfig({ hiddenSize: 512, intermediateSize: 1408, numLayers: 8, numHeads: 8, numKvHeads: 8, tieWordEmbeddings: false });

interface PickerView {
  waitingQueueSize: number | null;
  runningRequestsSize: number | null;
  kvCacheUsagePercent: number | null;
  activeModels: string[];
  waitingModels: string[];
  maxActiveModels: number | null;
  loraInfoTimestamp: number | null;
  cacheBlockSize: number | null;
  cacheNumBlocks: number | null;
  errors: string[];
}

needs(STORIES, GO_BINARY, debianGoPackage('github.com/prometheus/common/expfmt')).describe('the endpoint picker reads a replica', () => {
  let server: TestServer;
  let client: OpenAI;
  let scraper: string;
  let dir: string;

  const pickerView = async (): Promise<PickerView> => {
    const text = await (await fetch(`${server.baseUrl}/metrics`)).text();
    return JSON.parse(execFileSync(scraper, { input: text, encoding: 'utf8' }));
  };

  beforeAll(async () => {
    scraper = buildGoTool(SCRAPER_DIR);
    dir = mkdtempSync(join(tmpdir(), 'ortllm-epp-'));
    await writeDecoderHfDir(join(dir, 'model'), SLOW_DECODER, hfConfigJson(SLOW_DECODER), 11);
    writeRandomPeftAdapter(join(dir, 'adapter'), SLOW_DECODER, { rank: 8, alpha: 16, seed: 3, modules: LORA_MODULES });
    server = await startServer([
      '--max-num-seqs', '1', '--block-size', '16', '--num-gpu-blocks-override', String(BLOCKS),
      '--enable-lora', '--max-loras', '2', '--lora-modules', `tuned=${join(dir, 'adapter')}`,
    ], { model: join(dir, 'model') });
    client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'none', maxRetries: 0, timeout: 60_000 });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('idle: empty queues, no KV in use, the block size and block count of the flags', async () => {
    const view = await pickerView();
    expect(view.errors).toEqual([]);
    expect(view).toMatchObject({ waitingQueueSize: 0, runningRequestsSize: 0, kvCacheUsagePercent: 0, cacheBlockSize: 16, cacheNumBlocks: BLOCKS });
    // No adapter has run yet: the picker finds no series naming one, so it keeps no adapter state.
    expect(view.activeModels).toEqual([]);
    expect(view.maxActiveModels).toBeNull();
  });

  it('busy: one running, two waiting, KV in use, the adapter running and waiting, max_lora', async () => {
    // Every stream is read as it comes, so none pauses (a client that stops reading leaves the
    // batch); once seen busy, they are cancelled (a disconnect aborts the request).
    const cancel = new AbortController();
    const drained = [0, 1, 2].map(async () => {
      const request = { model: 'tuned', prompt: 'Once upon a time', max_tokens: 1000, temperature: 0, ignore_eos: true, stream: true } as const;
      try {
        const stream = await client.completions.create(request as never, { signal: cancel.signal });
        for await (const chunk of stream as unknown as AsyncIterable<unknown>) void chunk;
      } catch (err) {
        if (!cancel.signal.aborted) throw err;
      }
    });
    let busy: PickerView | null = null;
    await waitFor(async () => {
      const view = await pickerView();
      if (view.runningRequestsSize === 1 && view.waitingQueueSize === 2) busy = view;
      return busy !== null;
    }, 30_000, 'one running and two waiting');
    cancel.abort();
    await Promise.all(drained);
    const view = busy as unknown as PickerView;
    expect(view.errors).toEqual([]);
    expect(view.kvCacheUsagePercent).toBeGreaterThan(0);
    expect(view.kvCacheUsagePercent).toBeLessThanOrEqual(1);
    expect(view.activeModels).toEqual(['tuned']);
    expect(view.waitingModels).toEqual(['tuned']);
    expect(view.maxActiveModels).toBe(2);
    // The series' value is when it was current (seconds since the epoch): the picker keeps the newest.
    expect(Math.abs((view.loraInfoTimestamp ?? 0) - Date.now() / 1000)).toBeLessThan(60);

    await waitFor(async () => {
      const idle = await pickerView();
      return idle.waitingQueueSize === 0 && idle.runningRequestsSize === 0 && idle.kvCacheUsagePercent === 0;
    }, 10_000, 'idle again after the cancellations');
  }, 90_000);
});
