// The engine commands' wire, derived from ENGINE_COMMANDS: every command crosses a real
// MessageChannel as one flat message, reaches its handler, and each 'call' settles the caller's
// promise with the handler's outcome (including its failure, thrown or rejected).

import { MessageChannel } from 'node:worker_threads';
import { PendingCalls, remoteCommands, runCommand } from '../../../src/engine/core/command-wire';
import { ENGINE_COMMANDS, type CommandName, type CoreCommand, type CoreEvent, type EngineCommands } from '../../../src/engine/core/protocol';
import { defaultSamplingParams } from '../../../src/engine/sampling-params';
import type { EngineRequest } from '../../../src/engine/types';

/** A core that records what it ran; `failWith` makes a command fail (thrown for sends, rejected for calls). */
function recordingCore(ran: Array<[CommandName, unknown]>, failWith: Partial<Record<CommandName, string>> = {}): EngineCommands {
  const send = (name: CommandName) => (payload: unknown) => {
    ran.push([name, payload]);
    if (failWith[name]) throw new Error(failWith[name]);
  };
  const call = (name: CommandName) => async (payload: unknown) => {
    ran.push([name, payload]);
    await new Promise((r) => setImmediate(r));
    if (failWith[name]) throw new Error(failWith[name]);
  };
  return {
    add: send('add'),
    encode: send('encode'),
    abort: send('abort'),
    pause: send('pause'),
    resume: send('resume'),
    sleep: call('sleep'),
    wakeUp: call('wakeUp'),
    resetPrefixCache: call('resetPrefixCache'),
    kvCachedBlocks: async () => {
      ran.push(['kvCachedBlocks', undefined]);
      await new Promise((r) => setImmediate(r));
      return { groups: [{ group_idx: 0, block_size: 16, sliding_window: null, block_hashes: ['18446744073709551615'] }] };
    },
    loadLora: call('loadLora'),
    unloadLora: call('unloadLora'),
    shutdown: call('shutdown'),
  };
}

/** Frontend and core on the two ends of a real MessageChannel, as the worker has them. */
function wire(core: EngineCommands) {
  const commands = new MessageChannel();
  const events = new MessageChannel();
  const posted: CoreCommand[] = [];
  const calls = new PendingCalls();
  commands.port2.on('message', (command: CoreCommand) => void runCommand(core, command, (event) => events.port2.postMessage(event)));
  events.port1.on('message', (event: CoreEvent) => calls.settle(event));
  const remote = remoteCommands((command) => {
    posted.push(command);
    commands.port1.postMessage(command);
  }, calls);
  const close = () => [commands.port1, commands.port2, events.port1, events.port2].forEach((p) => p.close());
  return { remote, posted, calls, close };
}

const request: EngineRequest = { requestId: 'r1', promptTokenIds: [1, 2, 3], params: defaultSamplingParams() };
const until = (check: () => boolean) => new Promise<void>((resolve) => {
  const poll = () => (check() ? resolve() : setImmediate(poll));
  poll();
});

describe('engine command wire', () => {
  it('carries every declared command to its handler, sends as flat {type, payload} messages', async () => {
    const ran: Array<[CommandName, unknown]> = [];
    const { remote, posted, close } = wire(recordingCore(ran));
    remote.add(request);
    remote.encode({ ...request, requestId: 'e1' });
    remote.abort(['a']);
    remote.pause(['p']);
    remote.resume(['p']);
    await remote.sleep({ level: 2, mode: 'abort' });
    await remote.wakeUp();
    await remote.resetPrefixCache();
    // A call's result crosses the wire with its 'command-done'.
    expect((await remote.kvCachedBlocks()).groups[0].block_hashes).toEqual(['18446744073709551615']);
    await remote.loadLora({ name: 'sql', id: 1, path: '/adapters/sql' });
    await remote.unloadLora({ id: 1 });
    await remote.shutdown();
    await until(() => ran.length === 12);
    close();

    expect(ran.map(([name]) => name)).toEqual(Object.keys(ENGINE_COMMANDS));
    expect(ran[0][1]).toEqual(request);
    expect(ran[5][1]).toEqual({ level: 2, mode: 'abort' });
    expect(ran[9][1]).toEqual({ name: 'sql', id: 1, path: '/adapters/sql' });
    expect(ran[10][1]).toEqual({ id: 1 });
    expect(posted[0]).toEqual({ type: 'add', payload: request });
    expect(Object.keys(posted[2])).toEqual(['type', 'payload']);
    // Calls carry distinct ids, so concurrent ones settle independently.
    const ids = posted.filter((c) => 'callId' in c).map((c) => (c as { callId: number }).callId);
    expect(new Set(ids).size).toBe(7);
  });

  it("settles a call with its handler's failure, and later calls still succeed", async () => {
    const ran: Array<[CommandName, unknown]> = [];
    const { remote, close } = wire(recordingCore(ran, { sleep: 'cannot sleep now' }));
    await expect(remote.sleep({ level: 1, mode: 'wait' })).rejects.toThrow('cannot sleep now');
    await expect(remote.wakeUp()).resolves.toBeUndefined();
    close();
  });

  it('answers a call whose handler throws synchronously instead of leaving it pending', async () => {
    const replies: CoreEvent[] = [];
    const core = {
      ...recordingCore([]),
      resetPrefixCache: () => {
        throw new Error('no cache');
      },
    } as EngineCommands;
    await runCommand(core, { type: 'resetPrefixCache', payload: undefined, callId: 7 }, (e) => replies.push(e));
    expect(replies).toEqual([{ type: 'command-done', callId: 7, error: 'no cache' }]);
  });

  it("lets a failing send throw where it is dispatched (the worker's error path)", () => {
    const core = recordingCore([], { abort: 'bad ids' });
    expect(() => runCommand(core, { type: 'abort', payload: ['x'] }, () => undefined)).toThrow('bad ids');
  });

  it('fails pending and later calls once the core is gone', async () => {
    const calls = new PendingCalls();
    const pending = calls.call(() => undefined);
    calls.close('engine worker exited (code 1)');
    await expect(pending).rejects.toThrow('engine worker exited (code 1)');
    let sent = false;
    await expect(calls.call(() => (sent = true))).rejects.toThrow('engine worker exited (code 1)');
    expect(sent).toBe(false);
  });

  it('leaves events other than command-done to the caller', () => {
    const calls = new PendingCalls();
    expect(calls.settle({ type: 'dead', error: 'x' })).toBe(false);
    expect(calls.settle({ type: 'command-done', callId: 99, error: null })).toBe(true);
  });
});
