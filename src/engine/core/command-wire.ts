// Both ends of the engine commands' wire, derived from ENGINE_COMMANDS: the frontend's side
// posts each command as one message, the core's side dispatches it to its handler and answers
// each 'call' with a 'command-done' event.

import { ENGINE_COMMANDS, type CommandName, type CoreCommand, type CoreEvent, type EngineCommands } from './protocol';

/** Pairs the 'call' commands sent with their 'command-done' events, so they can be awaited. */
export class PendingCalls {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (result: unknown) => void; reject: (err: Error) => void }>();
  private closedReason: string | null = null;

  /** Sends through `send` with a fresh call id; resolves with its result when its 'command-done' arrives. */
  call(send: (callId: number) => void): Promise<unknown> {
    if (this.closedReason !== null) return Promise.reject(new Error(this.closedReason));
    const callId = this.nextId++;
    return new Promise<unknown>((resolve, reject) => {
      this.pending.set(callId, { resolve, reject });
      send(callId);
    });
  }

  /** Consumes 'command-done' events (returns true); other events are left to the caller. */
  settle(event: CoreEvent): boolean {
    if (event.type !== 'command-done') return false;
    const waiter = this.pending.get(event.callId);
    this.pending.delete(event.callId);
    if (event.error === null) waiter?.resolve(event.result);
    else waiter?.reject(new Error(event.error));
    return true;
  }

  /** Fails every pending call and each later one (the core is gone). */
  close(reason: string): void {
    this.closedReason = reason;
    for (const waiter of this.pending.values()) waiter.reject(new Error(reason));
    this.pending.clear();
  }
}

/** The frontend's side: each command becomes one posted CoreCommand. */
export function remoteCommands(post: (command: CoreCommand) => void, calls: PendingCalls): EngineCommands {
  const commands: Partial<Record<CommandName, (payload: unknown) => unknown>> = {};
  for (const type of Object.keys(ENGINE_COMMANDS) as CommandName[]) {
    commands[type] =
      ENGINE_COMMANDS[type].kind === 'call'
        ? (payload) => calls.call((callId) => post({ type, payload, callId } as CoreCommand))
        : (payload) => post({ type, payload } as CoreCommand);
  }
  return commands as EngineCommands;
}

/**
 * The core's side: runs `command` on `target`; a 'call' is answered through `reply` once it
 * settles (the returned promise settles with it). A 'send' that throws throws here.
 */
export function runCommand(target: EngineCommands, command: CoreCommand, reply: (event: CoreEvent) => void): Promise<void> | undefined {
  const handler = target[command.type] as (payload: unknown) => unknown;
  if (!('callId' in command)) {
    handler.call(target, command.payload);
    return undefined;
  }
  const { callId } = command;
  return new Promise<unknown>((resolve) => resolve(handler.call(target, command.payload))).then(
    (result) => reply(result === undefined ? { type: 'command-done', callId, error: null } : { type: 'command-done', callId, error: null, result }),
    (err: unknown) => reply({ type: 'command-done', callId, error: err instanceof Error ? err.message : String(err) }),
  );
}
