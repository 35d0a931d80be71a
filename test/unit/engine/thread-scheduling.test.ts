// The HTTP thread's SCHED_BATCH policy (src/engine/worker/thread-scheduling.ts), checked against
// the kernel's own view of each thread (/proc/thread-self/sched), not the addon's.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { batchScheduleCallingThread, callingThreadPolicy } from '../../../src/engine/worker/thread-scheduling';
import { needs } from '../../helpers/needs';
import { REPO_ROOT } from '../../helpers/server';

const ADDON = join(REPO_ROOT, 'native/build/Release/ortllm_sched.node');
const SCHED_FILE = '/proc/thread-self/sched';
const SCHED_OTHER = 0;
const SCHED_BATCH = 3;

/** The policy number the kernel lists for the thread that reads the file. */
const POLICY_OF_THIS_THREAD = `(() => Number(/^policy\\s*:\\s*(\\d+)/m.exec(require('node:fs').readFileSync('${SCHED_FILE}', 'utf8'))[1]))()`;
const kernelPolicy = (): number => Number(/^policy\s*:\s*(\d+)/m.exec(readFileSync(SCHED_FILE, 'utf8'))![1]);

/** A thread that reports its policy whenever it is sent a message. */
function policyReporter(): { policy(): Promise<number>; stop(): Promise<number> } {
  const worker = new Worker(`const { parentPort } = require('node:worker_threads'); parentPort.on('message', () => parentPort.postMessage(${POLICY_OF_THIS_THREAD}));`, { eval: true });
  return {
    policy: () =>
      new Promise<number>((resolve) => {
        worker.once('message', resolve);
        worker.postMessage('policy?');
      }),
    stop: () => worker.terminate(),
  };
}

describe('HTTP thread scheduling', () => {
  it('refuses a value other than 0 or 1', () => {
    expect(() => batchScheduleCallingThread({ ORTLLM_HTTP_SCHED_BATCH: 'yes' })).toThrow(/ORTLLM_HTTP_SCHED_BATCH must be 0 or 1/);
  });

  // One test: the calling thread's policy cannot be set back without privileges, so the order matters.
  needs(ADDON).it('leaves the thread alone at 0; else sets SCHED_BATCH on it and on threads it starts later, not on those it started before', async () => {
    if (process.platform !== 'linux' || !existsSync(SCHED_FILE)) {
      expect(batchScheduleCallingThread({})).toBe(false);
      return;
    }
    expect(batchScheduleCallingThread({ ORTLLM_HTTP_SCHED_BATCH: '0' })).toBe(false);
    expect(kernelPolicy()).toBe(SCHED_OTHER);
    expect(callingThreadPolicy()).toBe('other');

    const before = policyReporter();
    expect(batchScheduleCallingThread({})).toBe(true);
    expect(kernelPolicy()).toBe(SCHED_BATCH);
    expect(callingThreadPolicy()).toBe('batch');
    const after = policyReporter();
    try {
      expect(await before.policy()).toBe(SCHED_OTHER);
      expect(await after.policy()).toBe(SCHED_BATCH);
    } finally {
      await before.stop();
      await after.stop();
    }
  });
});
