// Contracts of the model runtime (plain TypeScript, no NestJS).
// Loaders produce a LoadedModel; the runner turns it into batched forward passes
// over a paged KV cache that the runner owns and the engine accounts for.

import type { WhisperEncoderConfig } from './whisper/whisper-config';

/**
 * What every architecture reports, whatever its family: the engine sizes batches and caches from
 * it and the API reads the vocabulary size. `architecture` is the key of the descriptor in
 * src/model/architectures/ that produced the config; families extend this with their own fields.
 */
export interface ModelArchConfig {
  architecture: string;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  maxPositionEmbeddings: number;
  /**
   * Encoder-decoder models (Whisper): the encoder's shape. The fields above then describe the
   * decoder, whose cross-attention K/V (numPositions rows per layer) live in the same paged cache.
   */
  encoder?: WhisperEncoderConfig;
}

/** Whisper (WhisperForConditionalGeneration): the decoder's shape above, the encoder's in `encoder`. */
export interface WhisperArchConfig extends ModelArchConfig {
  encoder: WhisperEncoderConfig;
  /** proj_out is the token embedding (unless a checkpoint says tie_word_embeddings: false). */
  tieWordEmbeddings: boolean;
}

/** Decoder shape (llama, qwen2), in Hugging Face config.json terms. */
export interface DecoderArchConfig extends ModelArchConfig {
  intermediateSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  /** Llama-3 style scaling ({rope_type:'llama3', factor, low_freq_factor, high_freq_factor,
   * original_max_position_embeddings}) or linear; null when absent. */
  ropeScaling: Record<string, unknown> | null;
  tieWordEmbeddings: boolean;
  /** qwen2 has biases on q/k/v projections. */
  attentionBias: boolean;

  // Partial rotary embeddings (phi3: Phi-4-mini's partial_rotary_factor 0.75, GGUF rope.dimension_count)
  /** Leading dims of each head RoPE rotates (rotate-half within them); the rest pass through. Absent = headDim. */
  rotaryDim?: number;

  // Per-layer attention options and q/k norms (the segmented decoder's backends read them).
  /** Per-head RMSNorm of q and k before RoPE (qwen3): weights self_attn.{q,k}_norm.weight [headDim], eps rmsNormEps. */
  qkNorm?: boolean;
  /** Sliding window: a query at position p attends to positions max(0, p - slidingWindow + 1) .. p; absent/0 = none. */
  slidingWindow?: number;
  /** Per layer, HF config.json's layer_types; all full when absent (every layer slides when slidingWindow is set and this is absent). */
  layerTypes?: readonly ('full_attention' | 'sliding_attention')[];
  /** Factor on q·k before the softmax; 1/sqrt(headDim) when absent. */
  attentionScale?: number;
  /** Per layer, its own RoPE setting (gemma3's local layers); null or absent = ropeTheta / ropeScaling. */
  layerRope?: readonly (RopeSetting | null)[];
  /**
   * Qwen2-VL's M-RoPE (rope_scaling.mrope_section, GGUF rope.dimension_sections): the rotary
   * half-dims that rotate by a row's t, h and w position (StepSequence.ropePositions), in that order.
   */
  mropeSection?: readonly [number, number, number];

  // Gemma-style layers (gemma2, gemma3): sandwich norms, GELU-gated MLP, scaled embeddings, soft-caps.
  /** Each sublayer's output is RMS-normed before its residual add (post_attention_layernorm, post_feedforward_layernorm) and the MLP reads pre_feedforward_layernorm. */
  sandwichNorms?: boolean;
  /** The gated MLP's activation: SwiGLU when absent, 'gelu_tanh' = GELU (tanh approximation) on the gate (gelu_pytorch_tanh). */
  hiddenActivation?: 'silu' | 'gelu_tanh';
  /** Embedded rows are multiplied by this before layer 0 (gemma: sqrt(hidden_size)); 1 when absent. */
  embeddingScale?: number;
  /** > 0: each scaled attention score becomes cap * tanh(score / cap) before the softmax (gemma2's attn_logit_softcapping). */
  attnLogitSoftcap?: number;
  /** > 0: the head's logits become cap * tanh(logit / cap) (final_logit_softcapping). */
  finalLogitSoftcap?: number;
  // Mixture of experts (mixtral, qwen3moe): moe/moe-config.ts reads and checks these.
  /** Experts of each MoE layer (num_local_experts / num_experts; GGUF expert_count); absent or 0 = dense MLPs. */
  numExperts?: number;
  /** Experts each token is routed to (num_experts_per_tok; GGUF expert_used_count). */
  numExpertsPerToken?: number;
  /** One expert's FFN width (moe_intermediate_size; mixtral's intermediate_size; GGUF expert_feed_forward_length). */
  expertIntermediateSize?: number;
  /** The top-k routing weights are renormalised to sum to 1 (mixtral always; qwen3moe norm_topk_prob). */
  normTopKProb?: boolean;
  /** Layers that keep a dense MLP of intermediateSize among MoE layers (qwen3moe mlp_only_layers, decoder_sparse_step). */
  denseLayers?: readonly number[];
}

/** One RoPE setting: base and HF-style rope_scaling (DecoderArchConfig's ropeTheta / ropeScaling). */
export interface RopeSetting {
  ropeTheta: number;
  ropeScaling: Record<string, unknown> | null;
}

/** BERT-style encoder shape (BERT, XLM-RoBERTa), in Hugging Face config.json terms. */
export interface EncoderArchConfig extends ModelArchConfig {
  intermediateSize: number;
  layerNormEps: number;
  /** hidden_act: 'gelu' (erf), 'gelu_new' / 'gelu_pytorch_tanh' (tanh approximation) or 'relu'. */
  hiddenAct: 'gelu' | 'gelu_tanh' | 'relu';
  /** Rows of token_type_embeddings (1 for XLM-RoBERTa: every token has type 0). */
  typeVocabSize: number;
  /** First position id of a sequence: 0 for BERT, padding_idx + 1 for XLM-RoBERTa. */
  positionOffset: number;
}

/** How a sequence's hidden states become one vector (vLLM's pooling_type). */
export type PoolingType = 'CLS' | 'MEAN' | 'LAST';

/** What a model's runner returns, which decides its graph's head (src/model/architectures/). */
export type ModelOutput =
  /** Next-token logits of a KV-cached decoder (generation). */
  | { kind: 'logits' }
  /** One pooled hidden state per sequence (embeddings). */
  | { kind: 'pooled'; pooling: PoolingType }
  /** Classifier logits per sequence, from the pooled hidden state (classification, cross-encoder scores). */
  | { kind: 'classifier'; pooling: PoolingType; numLabels: number }
  /** Encoder states (cross-attention K/V, once per request) + decoder logits: speech to text (Whisper). */
  | { kind: 'transcription' };

/** Outputs whose runner steps a KV-cached decoder and samples tokens (generation and transcription). */
export function generatesTokens(output: ModelOutput): boolean {
  return output.kind === 'logits' || output.kind === 'transcription';
}

/** What a pooling model serves (vLLM's pooling tasks). */
export type PoolingTask = 'embed' | 'classify';

/** How a pooling model's outputs are served: vLLM's PoolerConfig plus what the checkpoint says. */
export interface PoolerSettings {
  task: PoolingTask;
  pooling: PoolingType;
  /** Embeddings are L2-normalised unless a request says otherwise. */
  normalize: boolean;
  /** Matryoshka dimensions applied when a request gives none (--pooler-config dimensions). */
  dimensions: number | null;
  /** The model declares Matryoshka support (config.json is_matryoshka / matryoshka_dimensions). */
  matryoshka: boolean;
  /** The only `dimensions` values the model accepts, when it lists them. */
  matryoshkaDimensions: number[] | null;
  /** Inputs longer than max_model_len are embedded chunk by chunk and averaged (MEAN pooling). */
  enableChunkedProcessing: boolean;
  /** With chunked processing: the longest input accepted (null: no limit). */
  maxEmbedLen: number | null;
  /** Classification: logits -> probabilities. */
  activation: 'sigmoid' | 'softmax' | 'identity';
  /** Class names in index order (config.json id2label; LABEL_i when absent). */
  labels: string[];
  /** A (query, document) pair is one sequence with a separator and token type ids (cross-encoders). */
  sentencePairs: boolean;
  /** sentence_bert_config.json do_lower_case: inputs are lower-cased before tokenization. */
  lowerCaseInputs: boolean;
}

/** GGML block formats we keep quantized (raw blocks, rows along the input dimension). */
export type QuantFormat = 'q8_0' | 'q4_0' | 'q4_k' | 'q6_k';

/**
 * One weight in canonical Hugging Face layout and names
 * (`model.embed_tokens.weight`, `model.layers.{i}.self_attn.q_proj.weight`, …,
 * `model.norm.weight`, `lm_head.weight`). Linear weights are [out, in] row-major.
 * Q/K rows are in HF order (rotate-half RoPE): GGUF llama files are un-permuted by the loader.
 */
export type WeightTensor = (
  | { kind: 'f32'; shape: number[]; data: Float32Array }
  | { kind: 'quantized'; format: QuantFormat; shape: number[]; data: Uint8Array }
) & {
  /**
   * Where `data`'s exact bytes lie in the model file, so a reader that needs only parts of the
   * tensor (the token embedding's rows) can read them from there and the loaded copy can go.
   * Absent when the loader changed the bytes (a dtype conversion, GGUF's Q/K row permutation).
   */
  file?: TensorFileSpan;
};

export interface TensorFileSpan {
  path: string;
  /** Absolute byte offset of the tensor's first byte. */
  offset: number;
  byteLength: number;
}

export interface ModelWeights {
  names(): string[];
  has(name: string): boolean;
  get(name: string): WeightTensor;
  /** Drops a tensor a runner has copied into its session (RunnerOptions.consumeWeights). */
  release?(name: string): void;
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
  /**
   * A sentence pair as one sequence, as the tokenizer's post-processor joins pairs (BERT:
   * [CLS] a [SEP] b [SEP], with token type ids 0 then 1). Only tokenizer.json tokenizers have it.
   */
  encodePair?(text: string, pair: string, opts?: { addSpecialTokens?: boolean }): { ids: number[]; tokenTypeIds: number[] };
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
  /** A vision model's placeholder text (ImagePromptFormat.placeholderText): the 'string' format writes it for each image part (null: image parts are refused). */
  imagePlaceholder?: string | null;
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
  /** What the runner returns: logits (generation) or one pooled vector per sequence. */
  output: ModelOutput;
  /** How pooled outputs are served (defaults of /v1/embeddings, /classify, …); null for generation. */
  pooler: PoolerSettings | null;
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
  /**
   * What `--kv-cache-dtype auto` stores for this model (its data type): config.json's dtype /
   * torch_dtype, float16 for GGUF (runner/kv-dtype.ts); absent = float32.
   */
  kvCacheAutoDtype?: import('./runner/kv-dtype').KvStorageDtype;
  /** A vision-language model's image side (absent: text only). */
  vision?: import('./vision/vision-model').VisionModel;
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
  /**
   * Runners with KV pools (ModelRunner.kvPools): the sequence's table in each, [0] being
   * blockTable. A windowed pool's entries behind the window may be -1 (released blocks).
   */
  blockTables?: readonly (readonly number[])[];
  /** Return logits for every new token (prompt logprobs), not only the last. */
  allLogits?: boolean;
  /**
   * Attend each new token as a one-token step would (speculative verification): the attention
   * kernels for several query rows sum in another order than the decode kernel, and a verified
   * token must get the logits a plain decode would have given it.
   */
  attendRowByRow?: boolean;
  /** Encoder-decoder models: where this sequence's cross-attention K/V live. */
  encoder?: StepEncoderInput;
  /** The LoRA adapter this sequence runs with (an id given to ModelRunner.loras.add); absent or 0: the base model. */
  lora?: number;
  /** Rows of `tokens` that take these input vectors instead of their token's embedding (image positions): `data` is [n, hidden] for rows row..row+n-1. */
  inputEmbeds?: readonly { row: number; data: Float32Array }[];
  /** M-RoPE models: each row's rotary positions, [3 * tokens.length] (every row's t, then h, then w); absent: positionOffset + row for all three. */
  ropePositions?: Int32Array;
  /**
   * Runs of rows that attend each other in both directions (a Gemma 3 image's tokens): every row
   * of a run sees the whole run, and the rows before it, as transformers' token_type_ids mask lets
   * it. Each run lies wholly among `tokens` (the scheduler never cuts one).
   */
  bidirectionalRuns?: readonly { row: number; count: number }[];
}

export interface StepEncoderInput {
  /** KV blocks holding the encoder's K/V rows (ceil(encoder positions / blockSize) blocks). */
  blockTable: readonly number[];
  /** Set on the step that must fill those blocks: the encoder input (log-mel features [mels, frames]). */
  features?: Float32Array;
}

/** Valid until the runner's next step: a runner may write the next step's logits into the same memory. */
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
  dtype?: 'auto' | 'float32' | 'float16' | 'bfloat16';
  /** Storage type of the paged KV cache (model/runner/kv-dtype.ts; resolveKvCacheDtype resolves 'auto'). */
  kvCacheDtype?: import('./runner/kv-dtype').KvStorageDtype;
  /** The server's max_model_len: fixes which LongRoPE table the graphs use (graph/rope.ts); default the model's context length. */
  maxModelLen?: number;
  /**
   * The KV pools by layer group (runner/kv-pools.ts; pool 0 has numBlocks blocks); absent: one pool
   * of every layer. Only the segmented runner takes pools (kvPoolGroups says when).
   */
  kvPools?: readonly import('./runner/kv-pools').KvPool[];
  /**
   * K/V arrays on SharedArrayBuffers, so that another thread may read pinned blocks while a step
   * runs (a KV-transfer producer's socket thread); only the segmented runner takes it.
   */
  sharedKvCache?: boolean;
  /** --enable-lora: build for up to maxLoras adapters of rank <= maxRank in one step (absent: no adapters). */
  lora?: { maxLoras: number; maxRank: number };
  /**
   * Where a built graph's attention runs: 'native' (the paged-attention addon between graph
   * segments), 'graph' (inside one graph), or auto (native when the addon loads).
   */
  attention?: 'native' | 'graph';
  /**
   * The caller builds no other runner from this model: the runner may release each weight once
   * the session that copied it is built, so the loader's copy and the sessions' do not add up.
   */
  consumeWeights?: boolean;
  /**
   * false: Q8_0 linears stay in onnxruntime's MatMulNBits even where the addon's Q8_0 GEMM (AVX512-VNNI or AVX2)
   * could run them (segmented runner; for benchmarks and tests comparing the two).
   */
  nativeQ8Gemm?: boolean;
  /**
   * false: a small float32 decoder stays in onnxruntime segments even where the addon could run
   * it whole (runner/backends/native-f32.ts; for benchmarks and tests comparing the two).
   */
  smallDecoder?: boolean;
  /**
   * Token-embedding tables of at least this many bytes are read row by row from the model file
   * where they lie there unchanged (runner/embedding-rows.ts; default FILE_ROWS_MIN_BYTES).
   */
  embeddingFileMinBytes?: number;
}

export interface ModelRunner {
  readonly config: ModelArchConfig;
  readonly blockSize: number;
  readonly numBlocks: number;
  /** Its KV pools when they are not one full-attention pool (StepSequence.blockTables then gives a table per pool). */
  readonly kvPools?: readonly import('./runner/kv-pools').KvPool[];
  /** With RunnerOptions.lora: the adapters its steps' sequences may name (StepSequence.lora). */
  readonly loras?: RunnerLoras;
  /** Runs one forward pass over a batch; writes the new tokens' K/V into their blocks. */
  step(batch: readonly StepSequence[]): Promise<StepResult>;
  /** Copies whole KV blocks within a pool (pool 0 when absent; copy-on-write when n > 1 children share a partial prompt block). */
  copyBlocks(pairs: ReadonlyArray<readonly [src: number, dst: number, pool?: number]>): void;
  /** Whole-block reads and writes of its paged KV cache (KV transfer between replicas); absent when it keeps none. */
  readonly kvBlocks?: KvBlockStore;
  dispose(): Promise<void>;
}

/** Whole KV blocks as bytes: each of the pool's layers' K rows, then its V rows (PagedKvCache). */
export interface KvBlockStore {
  /** The storage type of the bytes (--kv-cache-dtype resolved). */
  readonly dtype: string;
  blockBytes(pool?: number): number;
  readBlock(block: number, pool?: number): Buffer;
  writeBlock(block: number, bytes: Uint8Array, pool?: number): void;
  /** Pool 0's arrays when they live in shared memory (another thread may read blocks from them), else null. */
  sharedLayout?(): import('./runner/kv-cache').SharedKvLayout | null;
}

/** The LoRA adapters a runner holds (one copy each, shared by every sequence naming it). */
export interface RunnerLoras {
  /** Adapters one step may mix (besides the base model): the scheduler keeps each step within it. */
  readonly maxLoras: number;
  /** Makes `weights` adapter `id` (> 0) for StepSequence.lora, replacing one of that id. */
  add(id: number, weights: import('./lora/lora-weights').LoraWeights): void;
  /** Forgets adapter `id` (no running sequence names it any more). */
  remove(id: number): void;
}

/** One sequence of a pooling forward (no KV cache: the whole sequence runs at once). */
export interface EncodeSequence {
  tokens: readonly number[];
  /** Segment of each token (sentence pairs of BERT cross-encoders); all 0 when absent. */
  tokenTypeIds?: readonly number[] | null;
}

/** Runner of a model served for pooling: one vector per sequence, nothing kept between calls. */
export interface PoolingRunner {
  readonly config: ModelArchConfig;
  /** Width of each returned vector: the hidden size, or num_labels for a classifier. */
  readonly outputSize: number;
  /** Pooled hidden states (or classifier logits), in batch order, before any normalisation or activation. */
  encode(batch: readonly EncodeSequence[]): Promise<Float32Array[]>;
  dispose(): Promise<void>;
}

// What the model is served as (--runner, --convert, --pooler-config; src/model/model-plan.ts).
export type RunnerFlag = 'auto' | 'generate' | 'pooling';
export type ConvertFlag = 'auto' | 'none' | 'embed' | 'classify' | 'reward';

/** --pooler-config (vLLM's PoolerConfig keys). */
export interface PoolerConfigFlag {
  pooling_type?: string;
  normalize?: boolean;
  dimensions?: number;
  enable_chunked_processing?: boolean;
  max_embed_len?: number;
  use_activation?: boolean;
}

export interface ModelServingFlags {
  runner: RunnerFlag;
  convert: ConvertFlag;
  poolerConfig: PoolerConfigFlag | null;
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
  /** --runner / --convert / --pooler-config; absent = vLLM's defaults (auto). */
  serving?: ModelServingFlags;
  /** --override-generation-config: merged over the generation defaults. */
  overrideGenerationConfig?: Record<string, unknown> | null;
  /** --hf-overrides / --rope-theta / --rope-scaling: config.json keys over the model's config. */
  hfOverrides?: Record<string, unknown> | null;
  /** --tokenizer: HF directory or GGUF file to take the tokenizer (and chat template) from. */
  tokenizer?: string | null;
  /** --disable-sliding-window: full attention on every layer, the context capped at the window. */
  disableSlidingWindow?: boolean;
  /** --mm-processor-kwargs: applied to a vision model's image processor (LoadedModel.vision.processor). */
  mmProcessorKwargs?: Record<string, unknown> | null;
}
