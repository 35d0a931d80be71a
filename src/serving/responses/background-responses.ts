// Background responses (`background: true`): stored as queued, run after the client has its
// answer, their progress saved as they go, followed by clients through the run's event log, and
// stopped by a cancel or delete from this replica or from any other sharing the store.

import { RequestValidationError } from '../../engine/errors';
import { BackgroundRuns, type BackgroundRun } from './background-runs';
import { OutputBuilder } from './output-builder';
import { failedResponse, responseShell, storedRecord, TERMINAL_EVENTS, type PreparedResponse } from './prepared-response';
import { LIVE_STATUSES, type OutputItem, type ResponseObject, type ResponseStatus, type ResponseStreamEvent } from './protocol';
import type { ResponsesStore } from './store';

/** How often a run saves its progress and checks it was not cancelled elsewhere. */
const PROGRESS_INTERVAL_MS = 1000;

/** A run's events, starting from `queued`, filling `builder`; failures end it with response.failed (see ResponsesServing). */
export type RunEvents = (prep: PreparedResponse, signal: AbortSignal, builder: OutputBuilder) => AsyncIterable<ResponseStreamEvent>;

export class BackgroundResponses {
  private readonly runs = new BackgroundRuns();

  constructor(
    private readonly store: ResponsesStore,
    private readonly runEvents: RunEvents,
  ) {}

  /** Listens for cancels and deletes from every replica (call once, before serving). */
  async listen(): Promise<void> {
    await this.store.onStopped((id) => this.abortHere(id));
  }

  /** Stores the queued response and runs it in the background (the client may leave). */
  async start(prep: PreparedResponse): Promise<ResponseObject> {
    const queued = responseShell(prep, 'queued');
    if (!(await this.store.put(storedRecord(prep, queued), { absent: true }))) {
      throw new RequestValidationError(`A response with id '${prep.id}' already exists.`, 'request_id');
    }
    const run = this.runs.start(prep.id);
    void this.run(prep, run);
    return queued;
  }

  /**
   * Every second the run checks its stored status (and saves its progress once running): a
   * response cancelled or deleted on another replica is noticed there and its engine request aborted.
   */
  private async run(prep: PreparedResponse, run: BackgroundRun): Promise<void> {
    const builder = new OutputBuilder();
    let current: ResponseObject = responseShell(prep, 'queued');
    /** Saves `response`; resolves to the store's error when it failed (a store hiccup is not a cancel). */
    const save = async (response: ResponseObject): Promise<Error | null> => {
      try {
        if (!(await this.store.put(storedRecord(prep, response), { statusIn: LIVE_STATUSES }))) run.abort.abort(new Error('response cancelled'));
        return null;
      } catch (err) {
        console.error(`[responses] saving background response ${prep.id} failed: ${(err as Error).message}`);
        return err as Error;
      }
    };
    // While it waits in the engine's queue the run only checks its status; once running it saves
    // its partial output too. Either way a cancel or delete from any replica shows up here.
    const timer = setInterval(() => {
      if (current.status === 'in_progress') {
        void save({ ...current, output: JSON.parse(JSON.stringify(builder.items)) as OutputItem[] });
        return;
      }
      void this.store.status(prep.id).then(
        (status) => {
          if (status === null || !LIVE_STATUSES.includes(status as ResponseStatus)) run.abort.abort(new Error('response cancelled'));
        },
        () => undefined,
      );
    }, PROGRESS_INTERVAL_MS);
    timer.unref();
    try {
      for await (const event of this.runEvents(prep, run.abort.signal, builder)) {
        if (event.type === 'response.in_progress' || TERMINAL_EVENTS.has(event.type)) {
          current = event.response as ResponseObject;
          const failure = await save(current);
          if (failure && TERMINAL_EVENTS.has(event.type)) {
            // Followers learn the result was not kept, as a foreground stream's client does.
            run.push({ type: 'response.failed', sequence_number: event.sequence_number, response: failedResponse(current, failure) });
            continue;
          }
        }
        run.push(event);
      }
    } catch (err) {
      // Refused before it started (e.g. by the engine): the stored response says so.
      await save(failedResponse(current, err));
    } finally {
      clearInterval(timer);
      this.runs.finish(prep.id, run);
    }
  }

  /** The events of a background run this server is running (or ran lately), after `startingAfter`. */
  follow(id: string, startingAfter: number | null, signal?: AbortSignal): AsyncIterable<ResponseStreamEvent> {
    const run = this.runs.get(id);
    if (!run) {
      throw new RequestValidationError(
        `Response '${id}' has no event stream here: only background responses can be streamed, from the server running them, until a few minutes after they finish.`,
        'stream',
      );
    }
    return run.follow(startingAfter, signal);
  }

  /** The run stops here at once and on its own replica as soon as the news arrives (its status check backs this up). */
  async stop(id: string): Promise<void> {
    this.abortHere(id);
    await this.store.announceStopped(id).catch((err: Error) => console.error(`[responses] announcing the stop of ${id} failed: ${err.message}`));
  }

  private abortHere(id: string): void {
    this.runs.get(id)?.abort.abort(new Error('response stopped'));
  }

  /** Server shutdown: runs stop (their stored status stays what it was last saved as). */
  abortAll(): void {
    this.runs.abortAll();
  }
}
