// deploy/slurm/ on a real single-machine Slurm cluster: the serve job's replicas, their published
// URLs and their stop on scancel; the run-batch job array and its merge job against one run-batch.

import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { needs } from '../helpers/needs';
import { defaultTestModel, ensureBuilt, REPO_ROOT, runCli } from '../helpers/server';
import { SLURM_FILES, SLURM_START_TIMEOUT_MS, startSlurm, type TestSlurm } from '../helpers/slurm';

const MODEL = defaultTestModel();
const SLURM_DIR = join(REPO_ROOT, 'deploy/slurm');
const ORTLLM = `${process.execPath} ${join(REPO_ROOT, 'dist/src/main.js')}`;

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Processes whose command line contains `token` (srun steps and the servers they started). */
function processesWith(token: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(token) && Number(pid) !== process.pid) found.push(`${pid}: ${cmdline}`);
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** What run-batch's record says, without what differs between runs (ids, timestamps). */
function comparable(line: string): unknown {
  const { custom_id, response, error } = JSON.parse(line) as {
    custom_id: string | null;
    response: { status_code: number; body: Record<string, unknown> | null };
    error: unknown;
  };
  const body = response.body === null ? null : { ...response.body, id: undefined, created: undefined };
  return { custom_id, status: response.status_code, body, error };
}

needs(MODEL, ...SLURM_FILES).describe('deploy/slurm on a single-machine Slurm cluster', () => {
  let slurm: TestSlurm;
  let dir: string;

  beforeAll(async () => {
    await ensureBuilt();
    slurm = await startSlurm();
    dir = mkdtempSync(join(tmpdir(), 'ortllm-slurm-jobs-'));
  }, SLURM_START_TIMEOUT_MS + 120_000);

  afterAll(async () => {
    await slurm?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  const jobOutput = (jobId: string): string => {
    const logs = join(dir, `ortllm-${jobId}.logs`);
    const replicas = existsSync(logs) ? readdirSync(logs).map((f) => `--- ${f}\n${readFileSync(join(logs, f), 'utf8').slice(-1500)}`) : [];
    return [readFileSync(join(dir, `serve-${jobId}.out`), { encoding: 'utf8', flag: 'a+' }), ...replicas].join('\n');
  };

  const submitServe = (name: string): string =>
    slurm
      .run('sbatch', ['--parsable', '--ntasks=2', `--output=${join(dir, 'serve-%j.out')}`, join(SLURM_DIR, 'ortllm-serve.sbatch'), MODEL, '--served-model-name', name], {
        cwd: dir,
        env: { ORTLLM },
      })
      .trim();

  const publishedUrls = async (jobId: string): Promise<string[]> => {
    const file = join(dir, `ortllm-${jobId}.urls`);
    for (let i = 0; i < 240 && !existsSync(file); i++) {
      if (slurm.jobState(jobId) !== 'RUNNING' && slurm.jobState(jobId) !== 'PENDING') break;
      await sleep(250);
    }
    if (!existsSync(file)) throw new Error(`no URL file after 60 s (job ${slurm.jobState(jobId)}):\n${jobOutput(jobId)}`);
    return readFileSync(file, 'utf8').trim().split('\n');
  };

  it('starts two replicas, publishes their URLs once healthy, and scancel stops them all', async () => {
    const name = `stories-${process.pid}-a`;
    const jobId = submitServe(name);
    const urls = await publishedUrls(jobId);

    expect(urls).toHaveLength(2);
    const ports = urls.map((url) => {
      const match = new RegExp(`^http://${slurm.node}:(\\d+)/v1$`).exec(url);
      expect(match).not.toBeNull();
      return match?.[1];
    });
    expect(new Set(ports).size).toBe(2);
    const texts: string[] = [];
    for (const url of urls) {
      expect((await fetch(url.replace(/\/v1$/, '/health'))).status).toBe(200);
      const client = new OpenAI({ baseURL: url, apiKey: 'not-used', maxRetries: 0 });
      const completion = await client.completions.create({ model: name, prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
      expect(completion.choices[0].text.length).toBeGreaterThan(0);
      texts.push(completion.choices[0].text);
    }
    expect(texts[1]).toBe(texts[0]);
    expect(processesWith(name).length).toBeGreaterThanOrEqual(2);

    slurm.run('scancel', [jobId]);
    expect(await slurm.waitForJobEnd(jobId, 30_000)).toBe('CANCELLED');
    expect(processesWith(name)).toEqual([]);
    expect(existsSync(join(dir, `ortllm-${jobId}.urls`))).toBe(false);
  }, 90_000);

  it('drains the replicas on the batch-shell SIGTERM that --signal sends before the time limit', async () => {
    const name = `stories-${process.pid}-b`;
    const jobId = submitServe(name);
    await publishedUrls(jobId);

    slurm.run('scancel', ['--batch', '--signal=TERM', jobId]);
    await slurm.waitForJobEnd(jobId, 30_000);
    const output = jobOutput(jobId);
    expect(output).toContain('replica 0 exited with status 0');
    expect(output).toContain('replica 1 exited with status 0');
    expect(output).toMatch(/SIGTERM: draining/);
    expect(processesWith(name)).toEqual([]);
    expect(existsSync(join(dir, `ortllm-${jobId}.urls`))).toBe(false);
  }, 90_000);

  it('fails the job, naming the replica and its log, when a replica exits before it is ready', async () => {
    const jobId = slurm
      .run('sbatch', ['--parsable', '--ntasks=2', `--output=${join(dir, 'serve-%j.out')}`, join(SLURM_DIR, 'ortllm-serve.sbatch'), join(dir, 'missing.gguf')], {
        cwd: dir,
        env: { ORTLLM },
      })
      .trim();
    expect(await slurm.waitForJobEnd(jobId, 60_000)).toBe('FAILED');
    expect(jobOutput(jobId)).toMatch(/error: replica \d exited before it was ready; the end of \S+replica-\d\.log:[\s\S]*missing\.gguf/);
    expect(existsSync(join(dir, `ortllm-${jobId}.urls`))).toBe(false);
  }, 90_000);

  it('a run-batch job array of two shards and its merge job give the output of one run-batch', async () => {
    const requests = [
      ...['Once upon a time', 'The little dog', 'She found a'].map((prompt, i) => ({
        custom_id: `completion-${i}`,
        method: 'POST',
        url: '/v1/completions',
        body: { model: 'stories', prompt, max_tokens: 8, temperature: 0 },
      })),
      ...['Tell me a story', 'Where is the cat?'].map((content, i) => ({
        custom_id: `chat-${i}`,
        method: 'POST',
        url: '/v1/chat/completions',
        body: { model: 'stories', messages: [{ role: 'user', content }], max_tokens: 8, temperature: 0 },
      })),
    ].map((r) => JSON.stringify(r));
    // A blank line (no request) and a malformed one (an error record naming its input line).
    const input = join(dir, 'requests.jsonl');
    writeFileSync(input, [...requests.slice(0, 2), '', ...requests.slice(2), 'not json', ''].join('\n'));

    const submitted = slurm.run(
      join(SLURM_DIR, 'submit-batch.sh'),
      ['--shards', '2', input, join(dir, 'sharded.jsonl'), '--model', MODEL, '--served-model-name', 'stories'],
      { cwd: dir, env: { ORTLLM } },
    );
    const [arrayJob, mergeJob] = submitted.trim().split(' ');
    expect(await slurm.waitForJobEnd(mergeJob, 60_000)).toBe('COMPLETED');
    for (const task of [0, 1]) expect(readFileSync(join(dir, `slurm-${arrayJob}_${task}.out`), 'utf8')).toContain(`shard ${task} (3 requests)`);

    const single = await runCli(['run-batch', '-i', input, '-o', join(dir, 'single.jsonl'), '--model', MODEL, '--served-model-name', 'stories']);
    expect(single.code).toBe(0);
    const sharded = readFileSync(join(dir, 'sharded.jsonl'), 'utf8').trim().split('\n').map(comparable);
    const reference = readFileSync(join(dir, 'single.jsonl'), 'utf8').trim().split('\n').map(comparable);
    expect(sharded).toHaveLength(6);
    expect(sharded).toEqual(reference);
    expect(reference.map((r) => (r as { custom_id: string | null }).custom_id)).toEqual(['completion-0', 'completion-1', 'completion-2', 'chat-0', 'chat-1', null]);
    expect(readdirSync(dir).filter((f) => f.includes('.shards.'))).toEqual([]);
  }, 90_000);
});
