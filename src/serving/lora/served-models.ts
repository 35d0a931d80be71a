// The names a server answers to (vLLM's OpenAIServingModels): the base model's served names and
// the LoRA adapters loaded under their own names, each with the LoraRequest the engine runs it
// by. Adapter ids count from 1 and are never reused (an in-place reload gets a new id), so an id
// the engine still holds for a running request never names another adapter.

import { existsSync } from 'node:fs';
import type { EngineClient, LoraRequest } from '../../engine/types';
import { OpenAIHttpError } from '../openai-error';
import { KeyedLock } from './keyed-lock';
import type { LoraResolver } from './lora-resolvers';

/** What a request's `model` names: the name responses report and the adapter to run (null: the base model). */
export interface ResolvedModel {
  name: string;
  lora: LoraRequest | null;
}

/** A loaded adapter as /v1/models lists it. */
export interface ServedAdapter {
  request: LoraRequest;
  /** The served base model it belongs to (its card's `parent`). */
  parent: string;
}

export interface ServedModelsOptions {
  /** --served-model-name: the first is reported for base-model requests. */
  servedModelNames: readonly string[];
  /** --enable-lora: without it every load is refused with vLLM's message. */
  enableLora: boolean;
  /** --model as given: what a resolved adapter's base_model_name_or_path must be. */
  baseModel?: string;
  /** Where names no one loaded are looked up on first use (vLLM: with VLLM_ALLOW_RUNTIME_LORA_UPDATING). */
  resolvers?: readonly LoraResolver[];
  /** Load and unload lines (vLLM logs them at info level); absent: console. */
  log?: { log(message: string): void; warn(message: string): void };
}

/** vLLM's load_lora_adapter body. */
export interface LoadLoraBody {
  lora_name?: string | null;
  lora_path?: string | null;
  load_inplace?: boolean | null;
}

/** vLLM's unload_lora_adapter body. */
export interface UnloadLoraBody {
  lora_name?: string | null;
  lora_int_id?: number | null;
}

export type LoraEngine = Pick<EngineClient, 'loadLora' | 'unloadLora'>;

/** A client's name or path as error messages echo it: a long one is cut (a 5 MB name must not come back 5 MB long). */
function shown(text: string): string {
  return text.length <= ECHO_LIMIT ? text : `${text.slice(0, ECHO_LIMIT)}… (${text.length} characters)`;
}
const ECHO_LIMIT = 256;

const invalidInput = (message: string): OpenAIHttpError => new OpenAIHttpError(400, message, null, 'InvalidUserInput');
const cannotBeFound = (name: string): OpenAIHttpError => new OpenAIHttpError(404, `The lora adapter '${shown(name)}' cannot be found.`);
/** vLLM's message (its worker's) for an adapter loaded into an engine started without --enable-lora. */
const LORA_NOT_ENABLED = 'LoRA is not enabled. Use --enable-lora to enable LoRA.';
/** vLLM's LoRAAdapterNotFoundError message (a path with no adapter: 404). */
const noAdapterFound = (name: string, path: string): string => `Loading lora ${shown(name)} failed: No adapter found for ${shown(path)}`;

export class ServedModels {
  private readonly adapters = new Map<string, ServedAdapter>();
  private readonly lock = new KeyedLock();
  private lastId = 0;
  private readonly log: NonNullable<ServedModelsOptions['log']>;

  constructor(
    private readonly opts: ServedModelsOptions,
    private readonly engine: LoraEngine | null = null,
  ) {
    this.log = opts.log ?? { log: (m) => console.log(`[lora] ${m}`), warn: (m) => console.warn(`[lora] ${m}`) };
  }

  /** The base model's names only (servings built without a registry, e.g. in unit tests). */
  static baseOnly(servedModelNames: readonly string[]): ServedModels {
    return new ServedModels({ servedModelNames, enableLora: false });
  }

  isBase(name: string): boolean {
    return this.opts.servedModelNames.includes(name);
  }

  /** The loaded adapters, in load order. */
  list(): ServedAdapter[] {
    return [...this.adapters.values()];
  }

  /** A request's `model`: absent or a base name runs the base model; an adapter's name runs it; anything else is vLLM's 404. */
  resolve(requested: string | null | undefined): ResolvedModel {
    if (requested == null || requested === '' || this.isBase(requested)) return { name: this.opts.servedModelNames[0], lora: null };
    const adapter = this.adapters.get(requested);
    if (adapter) return { name: requested, lora: adapter.request };
    throw OpenAIHttpError.modelNotFound(requested, [...this.opts.servedModelNames, ...this.adapters.keys()]);
  }

  /** --lora-modules at start-up: any failure fails the start with its message (vLLM's init_static_loras). */
  async loadStatic(modules: ReadonlyArray<{ name: string; path: string; baseModelName?: string }>): Promise<void> {
    for (const module of modules) {
      try {
        await this.load({ lora_name: module.name, lora_path: module.path }, module.baseModelName);
      } catch (err) {
        throw new Error((err as Error).message);
      }
    }
  }

  /** POST /v1/load_lora_adapter: vLLM's success text, or throws its error (400 InvalidUserInput, 404 no adapter, 400 load failure). */
  async load(body: LoadLoraBody, baseModelName?: string): Promise<string> {
    const name = body.lora_name;
    const path = body.lora_path;
    if (!name || !path) throw invalidInput("Both 'lora_name' and 'lora_path' must be provided.");
    return this.lock.run(name, async () => {
      const previous = this.adapters.get(name);
      if (previous && !body.load_inplace) {
        throw invalidInput(`The lora adapter '${shown(name)}' has already been loaded. If you want to load the adapter in place, set 'load_inplace' to True.`);
      }
      if (this.isBase(name)) throw invalidInput(`The lora adapter name '${shown(name)}' is a served model name (--served-model-name); choose another.`);
      if (!this.opts.enableLora || !this.engine) throw OpenAIHttpError.badRequest(LORA_NOT_ENABLED);
      if (!existsSync(path)) throw new OpenAIHttpError(404, noAdapterFound(name, path));
      const parent = baseModelName !== undefined && this.isBase(baseModelName) ? baseModelName : this.opts.servedModelNames[0];
      try {
        await this.register(name, path, parent);
      } catch (err) {
        // vLLM answers any "No adapter found" from its loader with its own LoRAAdapterNotFoundError.
        const message = (err as Error).message;
        throw message.includes('No adapter found') ? new OpenAIHttpError(404, noAdapterFound(name, path)) : OpenAIHttpError.badRequest(message);
      }
      // In place: requests from now on run the new weights under a new id; the engine drops the old
      // id once its requests end. Prefix-cache blocks are keyed by name and id, so none of the old serves the new.
      if (previous) await this.retire(previous.request);
      return `Success: LoRA adapter '${name}' added successfully.`;
    });
  }

  /**
   * vLLM's resolve_lora: a name neither served nor loaded is looked up by the resolvers and loaded
   * on first use. Found but not loadable: 400; found nowhere: left to resolve()'s 404.
   */
  async loadOnFirstUse(requested: string | null | undefined): Promise<void> {
    const resolvers = this.opts.resolvers ?? [];
    if (!requested || resolvers.length === 0 || this.isBase(requested) || this.adapters.has(requested)) return;
    await this.lock.run(requested, async () => {
      if (this.adapters.has(requested)) return;
      let found = false;
      for (const resolver of resolvers) {
        const path = resolver.resolve(this.opts.baseModel ?? '', requested);
        if (path === null) continue;
        found = true;
        try {
          await this.register(requested, path, this.opts.servedModelNames[0]);
          this.log.log(`Resolved and loaded LoRA adapter '${requested}' using ${resolver.name}`);
          return;
        } catch (err) {
          this.log.warn(`Failed to load LoRA '${requested}' resolved by ${resolver.name}: ${(err as Error).message}. Trying next resolver.`);
        }
      }
      if (found) throw OpenAIHttpError.badRequest(`LoRA adapter '${shown(requested)}' was found but could not be loaded.`);
    });
  }

  /** Loads `path` into the engine under a new id and serves it as `name` (the caller holds the name's lock). */
  private async register(name: string, path: string, parent: string): Promise<void> {
    if (!this.opts.enableLora || !this.engine) throw new Error(LORA_NOT_ENABLED);
    const request: LoraRequest = { name, id: ++this.lastId, path };
    await this.engine.loadLora(request);
    this.adapters.set(name, { request, parent });
    this.log.log(`Loaded new LoRA adapter: name '${name}', path '${path}'`);
  }

  /** After an in-place reload: the old id goes (the new adapter is served already, so a failure here is only logged). */
  private async retire(old: LoraRequest): Promise<void> {
    try {
      await this.engine?.unloadLora(old.id);
    } catch (err) {
      this.log.warn(`LoRA adapter '${old.name}' reloaded in place, but dropping its old id ${old.id} failed: ${(err as Error).message}`);
    }
  }

  /** POST /v1/unload_lora_adapter: vLLM's success text, or throws (400 no name, 404 unknown, 500 engine failure). */
  async unload(body: UnloadLoraBody): Promise<string> {
    const name = body.lora_name;
    if (!name) throw invalidInput("'lora_name' needs to be provided to unload a LoRA adapter.");
    return this.lock.run(name, async () => {
      const adapter = this.adapters.get(name);
      // lora_int_id, when given, must be the adapter's id (vLLM ignores it; here it is checked, not dropped).
      if (!adapter || (body.lora_int_id != null && body.lora_int_id !== adapter.request.id)) throw cannotBeFound(name);
      // Out of the registry first, so no new request picks the adapter while the engine lets it go.
      this.adapters.delete(name);
      try {
        await this.engine?.unloadLora(adapter.request.id);
      } catch {
        this.adapters.set(name, adapter);
        throw new OpenAIHttpError(500, `Failed to remove lora adapter '${shown(name)}' from the engine.`);
      }
      this.log.log(`Removed LoRA adapter: name '${name}'`);
      return `Success: LoRA adapter '${name}' removed successfully.`;
    });
  }
}
