// A real, throw-away single-machine Slurm cluster (Debian's slurm-wlm and munge; .ci/run installs
// them): munged, slurmctld and slurmd in a temporary directory with their own ports, one node (this
// host) in one partition. Commands (sbatch, squeue, ...) reach it through `env` (SLURM_CONF).
// Gate tests on SLURM_FILES with needs(), so they are listed as skipped when Slurm is missing:
//
//   needs(...SLURM_FILES).describe('…', () => {
//   let slurm: TestSlurm;
//   beforeAll(async () => { slurm = await startSlurm(); }, SLURM_START_TIMEOUT_MS);
//   afterAll(() => slurm?.stop());

import { ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, hostname, tmpdir, totalmem, userInfo } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port';

export const SLURM_FILES = ['/usr/sbin/slurmctld', '/usr/sbin/slurmd', '/usr/bin/sbatch', '/usr/sbin/munged', '/usr/sbin/mungekey'];
export const SLURM_START_TIMEOUT_MS = 60_000;

export interface TestSlurm {
  /** The node's name: this host's short name, which the jobs' URLs carry. */
  node: string;
  /** process.env plus SLURM_CONF: pass it to every Slurm command and job submission. */
  env: NodeJS.ProcessEnv;
  /** Runs a Slurm command (sbatch, scancel, ...) and returns its stdout; throws on failure. */
  run(command: string, args: string[], options?: { cwd?: string; env?: NodeJS.ProcessEnv }): string;
  /** scontrol's JobState (PENDING, RUNNING, COMPLETED, CANCELLED, FAILED, ...). */
  jobState(jobId: string): string;
  /** Resolves with the job's final state once it has left the queue. */
  waitForJobEnd(jobId: string, timeoutMs: number): Promise<string>;
  /** Cancels every job left, then stops the daemons and removes the directory. */
  stop(): Promise<void>;
}

const ACTIVE_STATES = new Set(['PENDING', 'CONFIGURING', 'RUNNING', 'COMPLETING', 'SUSPENDED', 'REQUEUED', 'RESIZING']);

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function slurmConf(dir: string, node: string, ports: { ctld: number; slurmd: number }): string {
  const user = userInfo().username;
  return [
    'ClusterName=ortllmtest',
    `SlurmctldHost=${node}(127.0.0.1)`,
    `SlurmctldPort=${ports.ctld}`,
    `SlurmdPort=${ports.slurmd}`,
    `SlurmUser=${user}`,
    `SlurmdUser=${user}`,
    'AuthType=auth/munge',
    'CredType=cred/munge',
    `AuthInfo=socket=${dir}/munge/munge.socket`,
    `StateSaveLocation=${dir}/state`,
    `SlurmdSpoolDir=${dir}/spool`,
    `SlurmctldPidFile=${dir}/slurmctld.pid`,
    `SlurmdPidFile=${dir}/slurmd.pid`,
    `SlurmctldLogFile=${dir}/log/slurmctld.log`,
    `SlurmdLogFile=${dir}/log/slurmd.log`,
    'ProctrackType=proctrack/linuxproc',
    'TaskPlugin=task/none',
    'SelectType=select/cons_tres',
    'SelectTypeParameters=CR_Core',
    'JobAcctGatherType=jobacct_gather/none',
    'AccountingStorageType=accounting_storage/none',
    'MpiDefault=none',
    'ReturnToService=2',
    // Jobs' processes get 5 s after SIGTERM before SIGKILL (the default is 30).
    'KillWait=5',
    // More CPUs than a small CI machine has, so a serve job and a batch array fit side by side.
    'SlurmdParameters=config_overrides',
    `NodeName=${node} NodeAddr=127.0.0.1 CPUs=${Math.max(8, cpus().length)} RealMemory=${Math.floor(totalmem() / 2 ** 20)} State=UNKNOWN`,
    `PartitionName=debug Nodes=${node} Default=YES MaxTime=INFINITE State=UP`,
    '',
  ].join('\n');
}

/** Starts munged, slurmctld and slurmd; resolves once sinfo shows the node idle. */
export async function startSlurm(): Promise<TestSlurm> {
  const dir = mkdtempSync(join(tmpdir(), 'ortllm-slurm-'));
  chmodSync(dir, 0o755);
  for (const sub of ['munge', 'state', 'spool', 'log']) mkdirSync(join(dir, sub));
  // munged refuses a key or socket directory that others can write to.
  chmodSync(join(dir, 'munge'), 0o755);
  const node = hostname().split('.')[0];
  const conf = join(dir, 'slurm.conf');
  writeFileSync(conf, slurmConf(dir, node, { ctld: await freePort(), slurmd: await freePort() }));
  // A test run inside a Slurm job must not hand that job's variables to the jobs it submits.
  const inherited = Object.entries(process.env).filter(([name]) => !/^(SLURM|SBATCH|SRUN|SALLOC)_/.test(name));
  const env: NodeJS.ProcessEnv = { ...Object.fromEntries(inherited), SLURM_CONF: conf };
  const key = join(dir, 'munge/munge.key');
  const made = spawnSync('mungekey', ['--create', `--keyfile=${key}`], { encoding: 'utf8' });
  if (made.status !== 0) throw new Error(`mungekey failed: ${made.stderr}`);
  chmodSync(key, 0o600);

  const daemons: ChildProcess[] = [];
  const daemon = (command: string, args: string[], log: string): void => {
    const out = openSync(join(dir, 'log', log), 'a');
    daemons.push(spawn(command, args, { env, stdio: ['ignore', out, out] }));
  };
  const run = (command: string, args: string[], options: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string => {
    const result = spawnSync(command, args, { cwd: options.cwd, env: { ...env, ...options.env }, encoding: 'utf8' });
    if (result.status !== 0) throw new Error(`${command} ${args.join(' ')} failed (${result.status}): ${result.stderr}`);
    return result.stdout;
  };
  const jobState = (jobId: string): string => {
    const result = spawnSync('scontrol', ['show', 'job', '-o', jobId], { env, encoding: 'utf8' });
    return /JobState=(\S+)/.exec(result.stdout)?.[1] ?? 'UNKNOWN';
  };
  const logs = (): string =>
    ['slurmctld.log', 'slurmd.log', 'munged.log']
      .map((name) => `--- ${name}\n${readFileSync(join(dir, 'log', name), { encoding: 'utf8', flag: 'a+' }).slice(-2000)}`)
      .join('\n');

  const stop = async (): Promise<void> => {
    const queued = spawnSync('squeue', ['-h', '-o', '%A'], { env, encoding: 'utf8' }).stdout?.trim();
    if (queued) {
      spawnSync('scancel', queued.split(/\s+/), { env });
      for (let i = 0; i < 60 && spawnSync('squeue', ['-h'], { env, encoding: 'utf8' }).stdout?.trim(); i++) await sleep(500);
    }
    for (const child of daemons.reverse()) {
      if (child.exitCode !== null || child.signalCode !== null) continue;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };

  try {
    daemon('munged', ['--foreground', '--force', `--key-file=${key}`, `--socket=${dir}/munge/munge.socket`,
      `--pid-file=${dir}/munge/munged.pid`, `--seed-file=${dir}/munge/munged.seed`, `--log-file=${dir}/log/munged.log`], 'munged.out');
    await waitFor(() => spawnSync('munge', ['-n', '-S', `${dir}/munge/munge.socket`]).status === 0, 10_000, 'munged');
    daemon('slurmctld', ['-D', '-i', '-f', conf], 'slurmctld.out');
    daemon('slurmd', ['-D', '-N', node, '-f', conf], 'slurmd.out');
    const idle = (): boolean => spawnSync('sinfo', ['-h', '-n', node, '-o', '%T'], { env, encoding: 'utf8' }).stdout?.trim() === 'idle';
    await waitFor(idle, SLURM_START_TIMEOUT_MS - 15_000, 'the Slurm node to be idle');
  } catch (err) {
    const message = `${(err as Error).message}\n${logs()}`;
    await stop();
    throw new Error(message);
  }

  return {
    node,
    env,
    run,
    jobState,
    async waitForJobEnd(jobId, timeoutMs) {
      await waitFor(() => !ACTIVE_STATES.has(jobState(jobId)), timeoutMs, `job ${jobId} to end`);
      return jobState(jobId);
    },
    stop,
  };
}

async function waitFor(done: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}
