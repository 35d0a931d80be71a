// The thread that starts the engine worker (the HTTP thread) switches itself to SCHED_BATCH once
// the worker is up (native/src/thread-scheduling.cc). ORTLLM_HTTP_SCHED_BATCH=0 keeps the normal
// policy.
//
// Why (issue 16, single-stream TPOT on the ~0.15 ms stories260K step): the worker posts one
// message per step, which wakes the HTTP thread from epoll. Linux places a woken thread on the
// waker's CPU when no other is idle (on 2 cores shared with the client, the runner's pool thread
// and the machine's other load, mostly) and lets it preempt the waker: the worker lost its core
// inside postMessage until the HTTP thread had handled the chunk. Measured with timers around the
// worker's postMessage (served stories260K, short prompts, 64 tokens, 1 stream): 46-60 us a step
// wall, of a ~0.24 ms step loop; a stand-in worker posting every 150 us to an idle main thread,
// 84-145 us a post (5-7 us while the main thread was busy; 19-30 us with the two threads pinned
// to different CPUs). A SCHED_BATCH thread never preempts on wake-up (the tick does, once the
// waker has had its slice), so it waits for a free core instead: postMessage fell to 5-16 us.
// Threads started before keep their policy (the engine worker, and onnxruntime's and the
// grammar worker's threads it starts); threads the HTTP thread starts later inherit it.

import { nativeAddonPath } from '../../model/runner/native-attention';

const ADDON = 'native/build/Release/ortllm_sched.node';

interface ThreadScheduling {
  setBatch(): boolean;
  policy(): string;
}

/**
 * Sets the calling thread to SCHED_BATCH unless ORTLLM_HTTP_SCHED_BATCH is '0'. Returns whether
 * it did (false also without the addon or off Linux, where there is nothing to set).
 */
export function batchScheduleCallingThread(env: NodeJS.ProcessEnv = process.env): boolean {
  const text = env.ORTLLM_HTTP_SCHED_BATCH;
  if (text !== undefined && text !== '' && text !== '0' && text !== '1') throw new Error(`ORTLLM_HTTP_SCHED_BATCH must be 0 or 1, got '${text}'`);
  if (text === '0') return false;
  return schedAddon()?.setBatch() ?? false;
}

/** The calling thread's policy as the kernel reports it ('other', 'batch', ...); null without the addon. */
export function callingThreadPolicy(): string | null {
  return schedAddon()?.policy() ?? null;
}

let addon: ThreadScheduling | null | undefined;

function schedAddon(): ThreadScheduling | null {
  if (addon === undefined) {
    const path = nativeAddonPath(ADDON);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    addon = path ? (require(path) as ThreadScheduling) : null;
  }
  return addon;
}
