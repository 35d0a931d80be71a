// The model-architecture contract. One descriptor per architecture (a file in this folder, listed
// in registry.ts) says everything that is particular to it: how its Hugging Face config.json (and,
// for the llama family, GGUF metadata) maps onto a config, which weights it has under which
// names, and which ONNX graph it builds for each thing a runner can return. Loaders, runners and
// the engine only ever talk to this interface: none of them branches on an architecture's name.
//
// How to add an architecture
//  1. Define its config: extend ModelArchConfig (src/model/types.ts) with the fields its graph
//     needs, and write `hf.config` to fill it from config.json (`gguf` too when llama.cpp files
//     of it should load). Set `architecture` to the descriptor's `name`.
//  2. `weightSpecs(config, output)`: every weight the graph reads for that output, with canonical
//     names and shapes. Loaders check checkpoints against it (missing, misshapen or unknown
//     tensors fail at load, naming the tensor), and random/dummy weights are generated from it.
//     `hf.tensorName` maps a checkpoint's stored name onto the canonical one (strip a class
//     prefix such as `bert.`) or null for tensors the graph never reads (buffers, other heads).
//  3. Graphs: implement the builders for what the architecture's runner returns, each with the
//     I/O contract of its runner (the file named beside each kind in GraphBuilders):
//       causalLm  logits of a decoder whose paged KV cache lives outside the graph;
//       causalLmSegments  the same decoder cut at its self-attention (one graph per stretch
//                 between two attention ops) for the native paged-attention kernel;
//       pooling   one pooled vector (hidden state or classifier logits) per sequence, no KV.
//     A family that returns something else (an encoder-decoder: encoder states + decoder logits
//     with cross-attention) adds a kind here, a runner for it in src/model/runner/, and the
//     choice of runner in src/model/runner/index.ts; existing kinds stay untouched.
//     `overrideKeys` / `applyOverride`: the config.json keys --hf-overrides may change (graph-shaping only).
//     `graphDtypes`: the --dtype compute types each kind is built in (float32 only when unlisted;
//     startup refuses the others).
//  4. List the descriptor in ARCHITECTURES (registry.ts). config.json's `architectures` class
//     name decides the default runner by its suffix (model-plan.ts: *ForCausalLM generates,
//     *Model embeds, *ForSequenceClassification classifies), as vLLM does.
//  5. Test it against an independent reference forward written in the test, on seeded random
//     weights written in the real checkpoint layout (see test/unit/model/encoder-*.test.ts).

import type { ComputeDtype } from '../graph/compute-dtype';
import type { BuiltModel } from '../graph/graph-builder';
import type { DecoderGraphOptions } from '../graph/decoder-graph';
import type { SegmentedDecoder, SegmentedDecoderOptions } from '../graph/decoder-segments';
import type { EncoderSegments } from '../graph/encoder-segments';
import type { LinearOptions } from '../graph/linear';
import type { GgufFile } from '../gguf/gguf-file';
import type { ModelArchConfig, ModelOutput, ModelWeights, PoolingType } from '../types';
import type { WeightMap } from '../weight-map';

type Json = Record<string, unknown>;

/** One weight of a model, canonical name and shape ([out, in] for linear layers). */
export interface WeightSpec {
  name: string;
  shape: number[];
  /** Norm gains start at 1 in random weights; everything else is a matrix or bias. */
  isNorm: boolean;
  /** LayerNorm biases start at 0 in random weights. */
  isNormBias?: boolean;
}

export interface HfConfigContext {
  /** The directory, for error messages. */
  source: string;
  /** Canonical tensor names the checkpoint holds; null when there are no weights (ONNX export). */
  hasTensor: (canonicalName: string) => boolean | null;
}

export interface HfMapping<C extends ModelArchConfig> {
  /** config.json `model_type` values this descriptor reads. */
  modelTypes: readonly string[];
  config(json: Json, ctx: HfConfigContext): C;
  /** Canonical name of a stored checkpoint tensor, or null when the graph never reads it. */
  tensorName(stored: string, config: C, output: ModelOutput): string | null;
}

export interface GgufMapping<C extends ModelArchConfig> {
  /** GGUF `general.architecture` values this descriptor reads. */
  architectures: readonly string[];
  /** `ropeFreqFactors`: the rope_freqs tensor llama.cpp stores for Llama-3.1-style scaling. */
  config(file: GgufFile, ropeFreqFactors: Float32Array | null): C;
  /** Canonical name of a GGUF tensor, null for tensors that are not weights; throws for unknown ones. */
  tensorName(ggufName: string): string | null;
  /** The GGUF name of a canonical weight (the writer, and shape checks before reading). */
  ggufName(canonicalName: string): string;
  /** Heads of a Q/K weight whose rows llama.cpp interleaved for RoPE (un-permuted on load); null otherwise. */
  ropePermutedHeads(canonicalName: string, config: C): number | null;
}

/** Options every pooling graph takes (see graph/pooling-graph.ts for the I/O contract). */
export interface PoolingGraphOptions extends LinearOptions {
  /** Longest sequence the graph must handle (RoPE tables of decoders). */
  maxPositions: number;
}

// Members are methods, not function-typed properties: a descriptor typed for its own config
// (ArchitectureDescriptor<DecoderArchConfig>) is then one of the registry's ArchitectureDescriptor.
export interface GraphBuilders<C extends ModelArchConfig> {
  /** Runner: runner/graph-runner.ts; I/O: graph/decoder-graph.ts. Output kind 'logits'. */
  causalLm?(config: C, weights: ModelWeights, opts: DecoderGraphOptions): BuiltModel;
  /** Runner: runner/segmented-runner.ts; I/O: graph/decoder-segments.ts. Output kind 'logits'. */
  causalLmSegments?(config: C, weights: ModelWeights, opts: SegmentedDecoderOptions): SegmentedDecoder;
  /** Runner: runner/pooling-runner.ts; I/O: graph/pooling-graph.ts. Output kinds 'pooled' and 'classifier'. */
  pooling?(config: C, weights: ModelWeights, output: ModelOutput, opts: PoolingGraphOptions): BuiltModel;
  /**
   * Runner: runner/bf16-pooling-runner.ts (--dtype bfloat16); I/O: graph/encoder-segments.ts. The
   * pooling graph cut around its linears, which the addon's bfloat16 GEMM runs.
   */
  poolingSegments?(config: C, weights: ModelWeights, output: ModelOutput): EncoderSegments;
  /**
   * Runner: runner/whisper-runner.ts; I/O: graph/whisper-encoder-graph.ts (features in, cross-attention
   * K/V out) and graph/whisper-decoder-graph.ts (the causal decoder's I/O plus cross blocks). Output kind 'transcription'.
   */
  encoderDecoder?(config: C, weights: ModelWeights, opts: EncoderDecoderGraphOptions): { encoder: BuiltModel; decoder: BuiltModel };
}

/** The kinds of graph a descriptor builds (GraphBuilders' members). */
export type GraphKind = keyof GraphBuilders<ModelArchConfig>;

/** Options of encoder-decoder graphs: the KV block size the cross-attention K/V are laid out in. */
export interface EncoderDecoderGraphOptions extends LinearOptions {
  blockSize: number;
}

export interface ArchitectureDescriptor<C extends ModelArchConfig = ModelArchConfig> {
  /** Registry key; configs carry it as `architecture`. */
  readonly name: string;
  /** Pooling when nothing else says (vLLM: LAST for decoders, CLS for BERT-style encoders). */
  readonly defaultPooling: PoolingType;
  /**
   * Its classifiers read a (query, document) pair as a sentence pair (separator token, token type
   * ids), as cross-encoders are trained; otherwise the two texts are simply concatenated.
   */
  readonly sentencePairs: boolean;
  readonly hf: HfMapping<C>;
  readonly gguf?: GgufMapping<C>;
  weightSpecs(config: C, output: ModelOutput): WeightSpec[];
  /**
   * Splits tensors the checkpoint stores fused (weightSpecs names them as stored) into the
   * canonical weights graphs and backends read (phi3: qkv_proj -> q/k/v_proj, gate_up_proj ->
   * gate/up_proj), in place; the loaders call it on what they read. Absent: stored = canonical.
   */
  unfuseWeights?(config: C, weights: WeightMap): void;
  /** Longest sequence the config supports (RoPE scaling may stretch max_position_embeddings). */
  contextLength(config: C): number;
  /** --hf-overrides: the config.json keys this architecture lets change (graph-shaping ones only). */
  readonly overrideKeys?: readonly string[];
  /** Applies one of overrideKeys to the config; throws with the reason for a bad value. */
  applyOverride?(config: C, key: string, value: unknown): C;
  readonly graphs: GraphBuilders<C>;
  /**
   * The --dtype compute types each graph kind builds in. A kind not listed builds in float32 only:
   * startup refuses --dtype float16 for it (registry.ts: graphDtypeFor) rather than silently
   * computing in float32.
   */
  readonly graphDtypes?: { readonly [K in GraphKind]?: readonly ComputeDtype[] };
}
