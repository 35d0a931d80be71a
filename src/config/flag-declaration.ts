// The shape of one `ortllm serve` flag's declaration (flags.ts holds them all): its config key,
// value type, default, validation, command-line spellings, VLLM_* variable and the area of the
// engine it configures (vLLM's EngineArgs -> ModelConfig, CacheConfig, SchedulerConfig, LoRAConfig, ...).

/** The per-area configs a flag lands in (engine-args.ts builds them). */
export const CONFIG_AREAS = ['model', 'load', 'cache', 'scheduler', 'device', 'structuredOutputs', 'observability', 'responses', 'frontend', 'lora'] as const;
export type ConfigArea = (typeof CONFIG_AREAS)[number];

/** One command-line spelling; `--help` and docs/serve-flags.md's flag table print them in declaration order. */
export interface CliSpelling {
  /** commander syntax, e.g. '--port <port>' or '--tokens-only'. */
  flags: string;
  description: string;
  /** Turns the text into the config value; throws with a readable message. A repeatable flag gets its value so far in `previous`. */
  parse?: (text: string, previous?: unknown) => unknown;
  choices?: readonly string[];
  /** Shown in --help. */
  defaultText?: string;
  /** A switch that sets its key to false (e.g. --disable-log-requests → enableLogRequests). */
  negates?: boolean;
  /** Listed right after this other spelling instead of beside its siblings (where vLLM's help has it). */
  listedAfter?: string;
}

/** What a default may depend on: the resolved device and model. */
export interface DefaultContext {
  device: 'cpu' | 'cuda';
  model: string | null;
}

/** The flags given on the command line, for a variable that yields to one of them. */
export type GivenFlags = Readonly<Record<string, unknown>>;

/** A VLLM_* environment variable that sets this flag when the command line does not. */
export interface EnvBinding<T> {
  name: string;
  /** What it does here (docs/serve-flags.md's table). */
  meaning: string;
  /** The value it sets, or undefined for none; throws with a readable message when malformed. */
  read(value: string, given: GivenFlags): T | undefined;
}

export interface FlagDeclaration<T, A extends ConfigArea = ConfigArea> {
  area: A;
  default: T | ((context: DefaultContext) => T);
  /** No spelling: set only through the environment (or resolveServerConfig's input). */
  cli?: readonly CliSpelling[];
  env?: EnvBinding<T>;
  valid?: (value: T) => boolean;
  /** The ConfigError message when `valid` fails. */
  invalid?: string | ((value: T) => string);
}

const inArea =
  <A extends ConfigArea>(area: A) =>
  <T>(declaration: Omit<FlagDeclaration<T>, 'area'>): FlagDeclaration<T, A> => ({ ...declaration, area });

export const modelFlag = inArea('model');
export const loadFlag = inArea('load');
export const cacheFlag = inArea('cache');
export const schedulerFlag = inArea('scheduler');
export const deviceFlag = inArea('device');
export const structuredOutputsFlag = inArea('structuredOutputs');
export const observabilityFlag = inArea('observability');
export const responsesFlag = inArea('responses');
export const frontendFlag = inArea('frontend');
export const loraFlag = inArea('lora');

/** The value type a declaration yields. */
export type FlagValue<F> = F extends FlagDeclaration<infer T, ConfigArea> ? T : never;
