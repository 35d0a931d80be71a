// Stream chunks whose JSON is written from a per-response template. A response's chunks all
// start with the same `{"id":…,"object":…,"created":…,"model":…,"choices":[`: it is serialized
// once, and a chunk's JSON is that head, its choice and the tail. The chunk object is still
// built (tests and other consumers read it); the SSE layer finds its JSON with chunkJson() and
// skips JSON.stringify. The JSON is byte-identical to JSON.stringify(chunk)
// (test/unit/serving/chunk-template.test.ts checks it for unicode, quotes, control characters,
// logprobs, usage and tool-call deltas).
//
// The JSON rides in the chunk's private field, so a copy (`{ ...chunk }`) or a chunk built
// elsewhere is serialized as usual: never stale. (A WeakMap from chunk to JSON instead cost
// ~0.9 us a chunk with its collection, most of what the template saves.)
//
// Why: the HTTP thread builds and writes one chunk per token per stream, and the object's spread
// and JSON.stringify cost several times the template (docs/perf/sse.md).

/**
 * A chunk built by a ChunkTemplate: a plain data object to every reader (own enumerable fields id,
 * object, created, model, choices, then usage when given, as the object literal it replaces),
 * carrying its JSON in a private field that neither a copy nor JSON.stringify sees.
 */
class TemplateChunk<O extends string, C, U> {
  declare usage?: U;
  readonly #json: string;

  constructor(
    public id: string,
    public object: O,
    public created: number,
    public model: string,
    public choices: C[],
    json: string,
    usage: U | undefined,
  ) {
    if (usage !== undefined) this.usage = usage;
    this.#json = json;
  }

  static jsonOf(payload: unknown): string | undefined {
    return payload instanceof TemplateChunk ? payload.#json : undefined;
  }
}

/** The JSON a ChunkTemplate wrote for `payload`, if it built it. */
export function chunkJson(payload: unknown): string | undefined {
  return TemplateChunk.jsonOf(payload);
}

export interface StreamChunkOf<O extends string, C, U> {
  id: string;
  object: O;
  created: number;
  model: string;
  choices: C[];
  usage?: U;
}

/** A JSON scalar as JSON.stringify writes it inside an object, or undefined when `value` is not one it writes as is. */
function scalarJson(value: unknown): string | undefined {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : 'null';
  return undefined;
}

/**
 * `{"index":…,"text":…,"logprobs":null,"finish_reason":…,"stop_reason":…}` for a completion
 * choice of exactly those keys in that order with scalar values (undefined = JSON.stringify it).
 */
export function plainCompletionChoiceJson(choice: {
  index: number;
  text: string;
  logprobs: unknown;
  finish_reason: string | null;
  stop_reason: string | number | null;
}): string | undefined {
  if (choice.logprobs !== null) return undefined;
  const finish = scalarJson(choice.finish_reason);
  const stop = scalarJson(choice.stop_reason);
  if (finish === undefined || stop === undefined || typeof choice.text !== 'string' || !Number.isInteger(choice.index)) return undefined;
  return `{"index":${choice.index},"text":${JSON.stringify(choice.text)},"logprobs":null,"finish_reason":${finish},"stop_reason":${stop}}`;
}

/**
 * `{"index":…,"delta":{"content":…},"logprobs":null,"finish_reason":…[,"stop_reason":…]}` for a
 * chat choice whose delta is exactly `{ content }` (undefined = JSON.stringify it).
 */
export function plainChatChoiceJson(choice: { index: number; delta: object; logprobs: unknown; finish_reason: string | null; stop_reason?: string | number | null }, content: string): string | undefined {
  if (choice.logprobs !== null || typeof content !== 'string' || !Number.isInteger(choice.index)) return undefined;
  const finish = scalarJson(choice.finish_reason);
  if (finish === undefined) return undefined;
  let stop = '';
  if ('stop_reason' in choice) {
    const value = scalarJson(choice.stop_reason);
    if (value === undefined) return undefined;
    stop = `,"stop_reason":${value}`;
  }
  return `{"index":${choice.index},"delta":{"content":${JSON.stringify(content)}},"logprobs":null,"finish_reason":${finish}${stop}}`;
}

/** One response's chunk head, serialized once; builds its one-choice chunks with their JSON. */
export class ChunkTemplate<O extends string> {
  private readonly head: string;

  constructor(
    readonly id: string,
    readonly object: O,
    readonly created: number,
    readonly model: string,
  ) {
    this.head = `{"id":${JSON.stringify(id)},"object":${JSON.stringify(object)},"created":${scalarJson(created) ?? JSON.stringify(created)},"model":${JSON.stringify(model)},"choices":[`;
  }

  /**
   * `{ id, object, created, model, choices: [choice] }`, then `usage` when given. `choiceJson`:
   * JSON.stringify(choice) when the caller wrote it from the choice's known shape (the
   * plain*ChoiceJson helpers); omitted, it is computed here.
   */
  chunk<C extends object, U extends object>(choice: C, choiceJson: string | undefined, usage?: U): StreamChunkOf<O, C, U> {
    const choicesJson = this.head + (choiceJson ?? JSON.stringify(choice)) + ']';
    const json = usage === undefined ? choicesJson + '}' : `${choicesJson},"usage":${JSON.stringify(usage)}}`;
    return new TemplateChunk(this.id, this.object, this.created, this.model, [choice], json, usage);
  }
}
