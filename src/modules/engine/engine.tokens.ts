// Injection tokens. Controllers and services depend on the EngineClient interface through
// ENGINE_CLIENT (so tests can swap in another client), and on the flags through SERVER_CONFIG:
//   constructor(@Inject(ENGINE_CLIENT) private readonly engine: EngineClient,
//               @Inject(SERVER_CONFIG) private readonly config: ServerConfig) {}
// SERVED_MODEL_INFO is what the served model does (served-routes.ts ServedModel), the facts the
// registered routes were chosen by. SERVED_MODELS is the ServedModels registry (served names and
// loaded LoRA adapters) every serving class resolves `model` through.

export const ENGINE_CLIENT = Symbol('ENGINE_CLIENT');
export const SERVER_CONFIG = Symbol('SERVER_CONFIG');
export const SERVED_MODEL_INFO = Symbol('SERVED_MODEL_INFO');
export const SERVED_MODELS = Symbol('SERVED_MODELS');
