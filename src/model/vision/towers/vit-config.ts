// The shape of a vision tower and its projector, whichever file it came from (a Hugging Face
// vision_config or a GGUF mmproj's clip.vision.* keys): one ViT with the family's differences as
// options, and the projector that turns its patch rows into the language model's input rows.

/** SigLIP's MLP runs gelu_pytorch_tanh, CLIP's quick_gelu (x * sigmoid(1.702 x)). */
export type VitActivation = 'gelu_tanh' | 'quick_gelu';

export interface VitConfig {
  hiddenSize: number;
  intermediateSize: number;
  /** Encoder layers to run: the feature layer's depth (LLaVA stops before the last ones). */
  numLayers: number;
  numHeads: number;
  layerNormEps: number;
  /** The square input side in pixels and the patch side (the conv's kernel and stride). */
  imageSize: number;
  patchSize: number;
  activation: VitActivation;
  /** The patch conv has a bias (SigLIP) or not (CLIP). */
  patchBias: boolean;
  /** CLIP: a class token before the patches, its own position, and pre_layrnorm over the embeddings. */
  classToken: boolean;
  preNorm: boolean;
  /** SigLIP: post_layernorm over the last layer's output. */
  postNorm: boolean;
  /** The rows handed to the projector: 'patches' drops the class token (LLaVA's 'default'), 'all' keeps every row ('full'). */
  select: 'patches' | 'all';
  projector: ProjectorConfig;
  /** LLaVA-NeXT: the learned row-end vector (image_newline, text width) the encoder appends after each grid row. */
  imageNewline?: boolean;
}

/** Gemma3MultiModalProjector: average pool of the patch grid, Gemma RMSNorm, a matmul. */
export interface Gemma3ProjectorConfig {
  kind: 'gemma3';
  /** Soft tokens per image (mm_tokens_per_image): a square number whose side divides the patch grid's. */
  tokensPerImage: number;
  textHiddenSize: number;
  /** mm_soft_emb_norm's epsilon (vision_config.layer_norm_eps in transformers). */
  normEps: number;
}

/** LLaVA's LlavaMultiModalProjector: linear_1, GELU (erf), linear_2. */
export interface MlpProjectorConfig {
  kind: 'mlp';
  textHiddenSize: number;
}

export type ProjectorConfig = Gemma3ProjectorConfig | MlpProjectorConfig;

/** Patches per side of the tower's input. */
export function patchesPerSide(c: VitConfig): number {
  return Math.floor(c.imageSize / c.patchSize);
}

/** Rows of the tower's sequence: the patches, plus the class token. */
export function sequenceLength(c: VitConfig): number {
  return patchesPerSide(c) ** 2 + (c.classToken ? 1 : 0);
}

/** Rows the encoder returns per image (the image's placeholder tokens). */
export function outputTokens(c: VitConfig): number {
  if (c.projector.kind === 'gemma3') return c.projector.tokensPerImage;
  return c.select === 'all' ? sequenceLength(c) : patchesPerSide(c) ** 2;
}

/** Throws naming the first setting the tower cannot run with. */
export function checkVitConfig(c: VitConfig, source: string): void {
  const fail = (what: string) => {
    throw new Error(`${source}: ${what}`);
  };
  if (c.hiddenSize % c.numHeads !== 0) fail(`vision hidden size ${c.hiddenSize} is not a multiple of its ${c.numHeads} heads`);
  if (c.imageSize % c.patchSize !== 0) fail(`vision image size ${c.imageSize} is not a multiple of the patch size ${c.patchSize}`);
  if (c.numLayers < 1) fail(`the vision tower runs ${c.numLayers} layers`);
  if (c.projector.kind === 'gemma3') {
    const side = Math.round(Math.sqrt(c.projector.tokensPerImage));
    const grid = patchesPerSide(c);
    if (side * side !== c.projector.tokensPerImage || grid % side !== 0) {
      fail(`mm_tokens_per_image ${c.projector.tokensPerImage} is not a square whose side divides the ${grid} x ${grid} patch grid`);
    }
  }
}
