// deploy/slurm/ on a real single-machine Slurm cluster: the serve job's replicas, their published
// URLs and their stop on scancel; the run-batch job array and its merge job against one run-batch.

import { spawnSync } from 'node:child_process';
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
function processesWith(token: string): Array<{ pid: number; cmdline: string }> {
  const found: Array<{ pid: number; cmdline: string }> = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    try {
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmdline.includes(token) && Number(pid) !== process.pid) found.push({ pid: Number(pid), cmdline });
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

  const readUrls = (jobId: string): string[] => readFileSync(join(dir, `ortllm-${jobId}.urls`), 'utf8').trim().split('\n');

  it('starts two replicas, publishes their URLs once healthy, drops one that dies, and scancel stops them all', async () => {
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
    const endpoints = JSON.parse(readFileSync(join(dir, `ortllm-${jobId}.json`), 'utf8')) as { job_id: string; replicas: Array<Record<string, unknown>> };
    expect(endpoints.job_id).toBe(jobId);
    expect(endpoints.replicas.map((r) => r.openai_base_url)).toEqual(urls);
    expect(endpoints.replicas[0]).toMatchObject({ replica: 0, node: slurm.node, model: name, health_url: urls[0].replace(/\/v1$/, '/health') });

    // A replica that crashes leaves the published list; the other one keeps serving.
    const servers = processesWith(name).filter((p) => p.cmdline.startsWith(process.execPath));
    expect(servers).toHaveLength(2);
    process.kill(servers[0].pid, 'SIGKILL');
    for (let i = 0; i < 40 && readUrls(jobId).length > 1; i++) await sleep(250);
    const [survivor] = readUrls(jobId);
    expect(readUrls(jobId)).toHaveLength(1);
    expect((await fetch(survivor.replace(/\/v1$/, '/health'))).status).toBe(200);

    slurm.run('scancel', [jobId]);
    expect(await slurm.waitForJobEnd(jobId, 30_000)).toBe('CANCELLED');
    expect(processesWith(name)).toEqual([]);
    expect(existsSync(join(dir, `ortllm-${jobId}.urls`))).toBe(false);
    expect(existsSync(join(dir, `ortllm-${jobId}.json`))).toBe(false);
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

    const refused = slurm
      .run('sbatch', ['--parsable', `--output=${join(dir, 'serve-%j.out')}`, join(SLURM_DIR, 'ortllm-serve.sbatch'), MODEL, '--port', '8000'], { cwd: dir, env: { ORTLLM } })
      .trim();
    expect(await slurm.waitForJobEnd(refused, 30_000)).toBe('FAILED');
    expect(jobOutput(refused)).toContain('error: --port: every replica listens on a free port (--port 0) that this script publishes');
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

  it('cancels the merge job when an array task fails, and keeps the shards', async () => {
    const input = join(dir, 'failing.jsonl');
    writeFileSync(input, '{"custom_id": "a"}\n{"custom_id": "b"}\n');
    const submitted = slurm.run(
      join(SLURM_DIR, 'submit-batch.sh'),
      ['--work-dir', join(dir, 'failing-shards'), input, join(dir, 'failing-out.jsonl'), '--model', join(dir, 'missing.gguf')],
      { cwd: dir, env: { ORTLLM } },
    );
    const [arrayJob, mergeJob] = submitted.trim().split(' ');
    expect(await slurm.waitForJobEnd(mergeJob, 60_000)).toBe('CANCELLED');
    expect(slurm.jobState(`${arrayJob}_0`)).toBe('FAILED');
    expect(existsSync(join(dir, 'failing-out.jsonl'))).toBe(false);
    expect(readdirSync(join(dir, 'failing-shards')).sort()).toEqual(['shard-0.jsonl', 'shard-1.jsonl']);
  }, 90_000);
});

describe('deploy/slurm/submit-batch.sh refuses bad arguments before submitting anything', () => {
  const submit = (args: string[]): { status: number | null; stderr: string } => {
    const result = spawnSync(join(SLURM_DIR, 'submit-batch.sh'), args, { encoding: 'utf8' });
    return { status: result.status, stderr: result.stderr };
  };
  const input = join(REPO_ROOT, 'package.json');

  it.each([
    ['cannot read input file /nonexistent/requests.jsonl', ['/nonexistent/requests.jsonl', '/tmp/out.jsonl']],
    ["--shards must be a positive number, got '0'", ['--shards', '0', input, '/tmp/out.jsonl']],
    ['output directory /nonexistent does not exist', [input, '/nonexistent/out.jsonl']],
    ['-o: the shard jobs set the input and output files', [input, '/tmp/out.jsonl', '--model', 'm.gguf', '-o', 'other.jsonl']],
    ['usage:', [input]],
  ])('%s', (message, args) => {
    const { status, stderr } = submit(args);
    expect(status).toBe(2);
    expect(stderr).toContain(message);
  });
});
