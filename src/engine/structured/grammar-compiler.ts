// Compiles constraints against the model's vocabulary, with a bounded LRU cache keyed by
// (kind, spec) — one compiler per model, so the tokenizer is part of the key by
// construction — and the compile times the metrics need
// (vllm:structured_output_compile_time_seconds… see modules/metrics).

import type { ConstraintSpec } from './grammar-spec';
import { asRequestError, buildGrammar } from './grammar-builder';
import { buildTokenizerInfo, byteLevelVocab } from './tokenizer-info';
import { GrammarConstraint } from './grammar-constraint';
import { loadXgrammar, type CompiledGrammar, type GrammarCompiler, type TokenizerInfo, type Xgrammar } from './xgrammar';
import type { Tokenizer } from '../../model/types';

/** Compiled grammars kept (vLLM's xgrammar cache is bounded by memory; ours by count). */
export const DEFAULT_GRAMMAR_CACHE_SIZE = 256;

export interface CompileStats {
  /** Seconds of each compile since the last drain (cache misses only). */
  compileSeconds: number[];
  cacheHits: number;
  cacheMisses: number;
}

export class StructuredOutputCompiler {
  private readonly cache = new Map<string, CompiledGrammar>();
  private stats: CompileStats = { compileSeconds: [], cacheHits: 0, cacheMisses: 0 };

  private constructor(
    private readonly xg: Xgrammar,
    private readonly compiler: GrammarCompiler,
    readonly tokenizerInfo: TokenizerInfo,
    readonly vocabSize: number,
    private readonly cacheSize: number,
  ) {}

  /** Builds the tokenizer info (once per model) and the compiler. */
  static create(tokenizer: Tokenizer, vocabSize: number, eosTokenIds: readonly number[], cacheSize = DEFAULT_GRAMMAR_CACHE_SIZE): Promise<StructuredOutputCompiler> {
    return StructuredOutputCompiler.fromVocab(byteLevelVocab(tokenizer, vocabSize), eosTokenIds, cacheSize);
  }

  /** Same, from the byte-level vocabulary (tokenizer-info.ts) — what a grammar worker thread receives. */
  static async fromVocab(vocab: string[], eosTokenIds: readonly number[], cacheSize = DEFAULT_GRAMMAR_CACHE_SIZE): Promise<StructuredOutputCompiler> {
    const xg = await loadXgrammar();
    const vocabSize = vocab.length;
    const info = await buildTokenizerInfo(xg, vocab, eosTokenIds);
    // xgrammar's own cache is off: this class's LRU bounds what stays compiled.
    const compiler = await xg.lib.GrammarCompiler.createGrammarCompiler(info, false);
    return new StructuredOutputCompiler(xg, compiler, info, vocabSize, cacheSize);
  }

  /** The compiled grammar of a spec, from the cache or compiled now (synchronous; throws RequestValidationError). */
  compile(spec: ConstraintSpec): CompiledGrammar {
    const hit = this.cache.get(spec.key);
    if (hit) {
      this.cache.delete(spec.key);
      this.cache.set(spec.key, hit);
      this.stats.cacheHits++;
      return hit;
    }
    const started = performance.now();
    const grammar = buildGrammar(this.xg, spec);
    let compiled: CompiledGrammar;
    try {
      const handle = asRequestError(spec, () => (this.compiler.handle as { CompileGrammar(g: unknown): unknown }).CompileGrammar(grammar));
      compiled = new this.xg.lib.CompiledGrammar(handle);
    } finally {
      grammar.delete();
    }
    this.stats.compileSeconds.push((performance.now() - started) / 1000);
    this.stats.cacheMisses++;
    this.cache.set(spec.key, compiled);
    if (this.cache.size > this.cacheSize) {
      const oldest = this.cache.keys().next().value as string;
      // Matchers hold their own reference to the compiled grammar: disposing the cache's is safe.
      this.cache.get(oldest)!.dispose();
      this.cache.delete(oldest);
    }
    return compiled;
  }

  /** A fresh matcher-backed constraint for one sequence. */
  async createConstraint(compiled: CompiledGrammar, enabled = true): Promise<GrammarConstraint> {
    const matcher = await this.xg.lib.GrammarMatcher.createGrammarMatcher(compiled);
    return new GrammarConstraint(matcher, this.vocabSize, enabled);
  }

  get cachedGrammars(): number {
    return this.cache.size;
  }

  /** Stats since the last call (the engine reports them once per step). */
  drainStats(): CompileStats {
    const out = this.stats;
    this.stats = { compileSeconds: [], cacheHits: 0, cacheMisses: 0 };
    return out;
  }
}
