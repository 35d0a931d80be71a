// Contracts of the model runtime (plain TypeScript, no NestJS).
// Loaders produce a LoadedModel; the runner turns it into batched forward passes
// over a paged KV cache that the runner owns and the engine accounts for.

export type Architecture = 'llama' | 'qwen2';

/** Decoder shape, in Hugging Face config.json terms. */
export interface ModelArchConfig {
  architecture: Architecture;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  /** Llama-3 style scaling ({rope_type:'llama3', factor, low_freq_factor, high_freq_factor,
   * original_max_position_embeddings}) or linear; null when absent. */
  ropeScaling: Record<string, unknown> | null;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** qwen2 has biases on q/k/v projections. */
  attentionBias: boolean;
}

/** GGML block formats we keep quantized (raw blocks, rows along the input dimension). */
export type QuantFormat = 'q8_0' | 'q4_0' | 'q4_k' | 'q6_k';

/**
 * One weight in canonical Hugging Face layout and names
 * (`model.embed_tokens.weight`, `model.layers.{i}.self_attn.q_proj.weight`, …,
 * `model.norm.weight`, `lm_head.weight`). Linear weights are [out, in] row-major.
 * Q/K rows are in HF order (rotate-half RoPE): GGUF llama files are un-permuted by the loader.
 */
export type WeightTensor =
  | { kind: 'f32'; shape: number[]; data: Float32Array }
  | { kind: 'quantized'; format: QuantFormat; shape: number[]; data: Uint8Array };

export interface ModelWeights {
  names(): string[];
  has(name: string): boolean;
  get(name: string): WeightTensor;
}

/** Sampling defaults read from generation_config.json (snake_case, as in the file). */
export interface GenerationDefaults {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
  repetition_penalty?: number;
  max_new_tokens?: number;
}

export interface DecodeOptions {
  skipSpecialTokens?: boolean; // default true
  spacesBetweenSpecialTokens?: boolean; // default true
}

/** One interface over tokenizer.json and GGUF vocabularies. */
export interface Tokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenId: number | null;
  readonly padTokenId: number | null;
  readonly bosToken: string | null;
  readonly eosToken: string | null;
  encode(text: string, opts?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[], opts?: DecodeOptions): string;
  /** Raw UTF-8 bytes this token contributes mid-sequence (SentencePiece '▁' → ' ', byte tokens → their byte). */
  tokenBytes(id: number): Uint8Array;
  /** The vocabulary string of a token (e.g. '▁Once', '<0x0A>'), undefined when out of range. */
  idToToken(id: number): string | undefined;
  isSpecial(id: number): boolean;
}

export interface ChatMessage {
  role: string;
  content: string | null | Array<{ type: string; text?: string; [k: string]: unknown }>;
  [k: string]: unknown;
}

export interface ChatRenderOptions {
  addGenerationPrompt: boolean;
  continueFinalMessage: boolean;
  tools?: unknown[] | null;
  documents?: unknown[] | null;
  /** chat_template_kwargs, passed through to the template. */
  extraKwargs?: Record<string, unknown> | null;
  /** A per-request template overriding the model's. */
  template?: string | null;
  /** How message content reaches the template (--chat-template-content-format); 'auto' (default) detects it. */
  contentFormat?: 'auto' | 'string' | 'openai';
}

export interface ChatTemplate {
  /** Renders with the `tool_use` variant when `opts.tools` is given and the model has one. */
  render(messages: ChatMessage[], opts: ChatRenderOptions): string;
  /** The Jinja source rendered for `opts` (/render re-renders it with marked {% generation %} blocks). */
  sourceFor(opts: Pick<ChatRenderOptions, 'tools'>): string | null;
}

export interface LoadedModel {
  /** The MODEL argument (path) or 'dummy'. */
  source: string;
  config: ModelArchConfig;
  /** Weights to build the graph from; null for an ONNX export (see onnxPath). */
  weights: ModelWeights | null;
  onnxPath: string | null;
  /** null with --skip-tokenizer-init / --tokens-only. */
  tokenizer: Tokenizer | null;
  /** null when the model has no template and none was given: chat then answers 400. */
  chatTemplate: ChatTemplate | null;
  generationDefaults: GenerationDefaults;
  /** eos ids: tokenizer eos plus generation_config eos_token_id list. */
  eosTokenIds: number[];
  /** Context length the model supports (config / GGUF context_length). */
  contextLength: number;
}

// ---------------------------------------------------------------------------
// Runner: the engine's view of the model.

export interface StepSequence {
  /** New tokens to run this step (>= 1). */
  tokens: readonly number[];
  /** Number of tokens of this sequence already in the KV cache = position of tokens[0]. */
  positionOffset: number;
  /** KV block ids covering positions [0, positionOffset + tokens.length). */
  blockTable: readonly number[];
  /** Return logits for every new token (prompt logprobs), not only the last. */
  allLogits?: boolean;
}

export interface StepResult {
  /** Last-position logits, [batch.length * vocabSize]. */
  logits: Float32Array;
  /** Per sequence: [tokens.length * vocabSize] when allLogits was asked, else null. */
  allLogits: (Float32Array | null)[];
}

export interface RunnerOptions {
  blockSize: number;
  numBlocks: number;
  device: 'cpu' | 'cuda';
  intraOpThreads?: number;
  /** Weight and activation type of the built graph ('auto' = float32); an ONNX export keeps its own. */
  dtype?: 'auto' | 'float32' | 'float16';
  /** Storage type of the paged KV cache (model/runner/kv-dtype.ts). */
  kvCacheDtype?: import('./runner/kv-dtype').KvStorageDtype;
}

export interface ModelRunner {
  readonly config: ModelArchConfig;
  readonly blockSize: number;
  readonly numBlocks: number;
  /** Runs one forward pass over a batch; writes the new tokens' K/V into their blocks. */
  step(batch: readonly StepSequence[]): Promise<StepResult>;
  /** Copies whole KV blocks (copy-on-write when n > 1 children share a partial prompt block). */
  copyBlocks(pairs: ReadonlyArray<readonly [src: number, dst: number]>): void;
  dispose(): Promise<void>;
}

/** What `loadModel` (src/model/load-model.ts) takes; ServerConfig maps flags onto it. */
export interface LoadModelOptions {
  /** GGUF file or Hugging Face directory; null = built-in dummy model. */
  model: string | null;
  loadFormat: 'auto' | 'dummy';
  /** False: metadata, tokenizer and template only (the HTTP thread's copy). */
  loadWeights: boolean;
  /** --skip-tokenizer-init / --tokens-only. */
  skipTokenizer: boolean;
  /** --chat-template: a file path or an inline template. */
  chatTemplate: string | null;
  /** --generation-config: 'auto' | 'vllm' | folder path. */
  generationConfig: string;
  /** --override-generation-config: merged over the generation defaults. */
  overrideGenerationConfig?: Record<string, unknown> | null;
  /** --hf-overrides / --rope-theta / --rope-scaling: config.json keys over the model's config. */
  hfOverrides?: Record<string, unknown> | null;
  /** --tokenizer: HF directory or GGUF file to take the tokenizer (and chat template) from. */
  tokenizer?: string | null;
}
