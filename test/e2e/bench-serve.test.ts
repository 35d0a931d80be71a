// `ortllm bench serve` against a live ortllm: vLLM's report and result JSON with numbers that
// add up (every request completes, output tokens = requests × max_tokens with ignore_eos,
// throughput = tokens / duration, percentiles ordered), and a clear exit 1 for a dead URL.

import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultTestModel, runCli, startServer, SERVER_START_TIMEOUT_MS, type TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';

const onModel = needs(defaultTestModel());

onModel.describe('ortllm bench serve', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startServer(['--max-model-len', '256', '--disable-uvicorn-access-log']);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => server?.stop());

  it("prints vLLM's report and writes a result JSON whose numbers are sane", async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'ortllm-bench-')), 'result.json');
    const run = await runCli([
      'bench', 'serve', '--base-url', server.baseUrl, '--dataset-name', 'random', '--num-prompts', '12',
      '--random-input-len', '24', '--random-output-len', '8', '--request-rate', '40', '--max-concurrency', '4',
      '--ignore-eos', '--num-warmups', '2', '--metric-percentiles', '50,99', '--percentile-metrics', 'ttft,tpot,itl,e2el',
      '--result-file', file, '--disable-tqdm',
    ]);
    expect([run.code, run.stderr.slice(-1000)]).toEqual([0, expect.any(String)]);
    expect(run.stdout).toMatch(/=+ Serving Benchmark Result =+/);
    expect(run.stdout).toMatch(/Successful requests:\s+12\n/);
    expect(run.stdout).toMatch(/Maximum request concurrency:\s+4\n/);
    expect(run.stdout).toMatch(/P99 TTFT \(ms\):\s+\d+\.\d\d/);
    const r = JSON.parse(readFileSync(file, 'utf8'));
    expect(r).toMatchObject({ completed: 12, failed: 0, total_output_tokens: 96, max_concurrency: 4, num_prompts: 12, request_rate: 40 });
    // About 24 random tokens per prompt plus BOS, as the server counted them (a decode/encode round trip may shift a few).
    expect(r.total_input_tokens).toBeGreaterThan(12 * 15);
    expect(r.total_input_tokens).toBeLessThanOrEqual(12 * 30);
    expect(r.output_throughput).toBeCloseTo(96 / r.duration, 6);
    expect(r.request_throughput).toBeCloseTo(12 / r.duration, 6);
    for (const m of ['ttft', 'tpot', 'itl', 'e2el']) {
      expect(r[`mean_${m}_ms`]).toBeGreaterThan(0);
      expect(r[`p99_${m}_ms`]).toBeGreaterThanOrEqual(r[`p50_${m}_ms`]);
    }
    expect(r.mean_e2el_ms).toBeGreaterThan(r.mean_ttft_ms);
    expect(r.max_concurrent_requests).toBeGreaterThanOrEqual(1);
    // One ITL per chunk after the first, as vLLM's bench counts them: 7 for 8 tokens, fewer when
    // a chunk carried several (the server folds the steps a client fell behind on into one).
    expect(r.itls.every((l: number[]) => l.length <= 7)).toBe(true);
    expect(r.itls.flat().length).toBeGreaterThan(12);
  });

  it("exits 1 with the server's error when the requests are refused", async () => {
    const run = await runCli(['bench', 'serve', '--base-url', server.baseUrl, '--model', 'no-such-model', '--tokenizer', defaultTestModel(), '--num-prompts', '1', '--disable-tqdm']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/Initial test run failed.*HTTP 404: .*no-such-model/);
  });

  it('exits 1 with a message when the server cannot be reached', async () => {
    const run = await runCli(['bench', 'serve', '--base-url', 'http://127.0.0.1:9', '--num-prompts', '1', '--disable-tqdm']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9/);
  });
});
