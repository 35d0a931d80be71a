// Tokenizer parity with llama.cpp: small GGUF vocabularies of each kind the new families ship
// (byte-level BPE with tokenizer.ggml.pre qwen2, llama-bpe, gpt-4o, tekken, gpt-2, smollm; Gemma's SentencePiece without
// space prefix) in a tiny random Llama, tokenized by ortllm and by llama-server's /tokenize on the
// same file, text by text. Prints one line per vocabulary and each text where the ids differ.
//   npm run build && node dist/bench/tokenizer-parity.js [LLAMA_SERVER]
// (default: .bench-cache/llama.cpp/build/bin/llama-server of the main checkout, run with -t 1).

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gguf } from '@huggingface/gguf';
import { writeModelGguf } from '../src/model/gguf/write-model';
import { gv, type GgufTypedValue } from '../src/model/gguf/writer';
import { createTokenizerFromGguf } from '../src/model/tokenizer';
import { EDGE_CASES, EDGE_TRAINING, trainMerges, vocabularyOf, type ReferencePre } from '../test/helpers/byte-level-bpe-reference';
import { lazyRandomTensors, llamaConfig } from './random-llama';

const DEFAULT_SERVER = '/work/main/.bench-cache/llama.cpp/build/bin/llama-server';
const SPECIAL = ['<|endoftext|>', '<|im_start|>', '<|im_end|>'];
const TEXTS = [...EDGE_CASES, EDGE_CASES.join(''), '<|im_start|>user\nHi 123<|im_end|>\n'];

function bpeVocabulary(pre: ReferencePre): Record<string, GgufTypedValue> {
  const merges = trainMerges(EDGE_TRAINING, pre, 400);
  const tokens = [...vocabularyOf(merges), ...SPECIAL];
  return {
    'tokenizer.ggml.model': gv.str('gpt2'),
    'tokenizer.ggml.pre': gv.str(pre),
    'tokenizer.ggml.tokens': gv.strings(tokens),
    'tokenizer.ggml.token_type': gv.i32s(tokens.map((t) => (SPECIAL.includes(t) ? 3 : 1))),
    'tokenizer.ggml.merges': gv.strings(merges.map(([l, r]) => `${l} ${r}`)),
    'tokenizer.ggml.bos_token_id': gv.u32(tokens.indexOf('<|endoftext|>')),
    'tokenizer.ggml.eos_token_id': gv.u32(tokens.indexOf('<|im_end|>')),
    'tokenizer.ggml.add_bos_token': gv.bool(false),
  };
}

/** Gemma-like: control turn markers, byte fallback, whitespace-run pieces, no space prefix. */
function gemmaVocabulary(): Record<string, GgufTypedValue> {
  const control = ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>', ...SPECIAL];
  const bytes = Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
  const chars = [...new Set(Array.from(EDGE_TRAINING.join('').replace(/ /g, '▁')))].filter((c) => c.length === 1 && c.charCodeAt(0) < 0x2e80);
  const pieces = ['▁▁', '▁t', 'he', '▁the', '▁▁▁▁', '\n\n', 'in', 'ing', '▁a', 'er', '▁w', 'or', '▁wor', 'ld', '▁world', '12', '▁1'];
  const tokens = [...control, ...bytes, ...chars, ...pieces];
  const scores = [...control.map(() => 0), ...bytes.map(() => 0), ...chars.map((_, i) => -1000 - i), ...pieces.map((_, i) => -i)];
  return {
    'tokenizer.ggml.model': gv.str('llama'),
    'tokenizer.ggml.tokens': gv.strings(tokens),
    'tokenizer.ggml.scores': gv.f32s(scores),
    'tokenizer.ggml.token_type': gv.i32s([...control.map((t) => (t === '<unk>' ? 2 : 3)), ...bytes.map(() => 6), ...chars.map(() => 1), ...pieces.map(() => 1)]),
    'tokenizer.ggml.bos_token_id': gv.u32(2),
    'tokenizer.ggml.eos_token_id': gv.u32(1),
    'tokenizer.ggml.unknown_token_id': gv.u32(3),
    'tokenizer.ggml.add_bos_token': gv.bool(true),
    'tokenizer.ggml.add_space_prefix': gv.bool(false),
  };
}

async function waitForHealth(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`llama-server exited with ${child.exitCode}`);
    try {
      if ((await fetch(`${url}/health`)).ok) return;
    } catch { /* not listening yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('llama-server did not become healthy');
}

async function compare(name: string, path: string, server: string, port: number): Promise<boolean> {
  const metadata = (await gguf(path, { allowLocalFile: true })).metadata as Record<string, unknown>;
  const ours = createTokenizerFromGguf(metadata);
  const child = spawn(server, ['-m', path, '-t', '1', '--port', String(port), '-c', '256', '-np', '1'], { stdio: 'ignore' });
  const url = `http://127.0.0.1:${port}`;
  let differ = 0;
  try {
    await waitForHealth(url, child);
    for (const text of TEXTS) {
      const res = await fetch(`${url}/tokenize`, { method: 'POST', body: JSON.stringify({ content: text, add_special: false, parse_special: true }) });
      const theirs = ((await res.json()) as { tokens: number[] }).tokens;
      const mine = ours.encode(text, { addSpecialTokens: false });
      if (JSON.stringify(theirs) !== JSON.stringify(mine)) {
        differ++;
        console.log(`  ${name}: ${JSON.stringify(text.slice(0, 40))}\n    llama.cpp ${JSON.stringify(theirs)}\n    ortllm    ${JSON.stringify(mine)}`);
      }
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  console.log(`${name}: ${TEXTS.length - differ}/${TEXTS.length} texts give identical ids`);
  return differ === 0;
}

async function main(): Promise<void> {
  const server = process.argv[2] ?? DEFAULT_SERVER;
  const dir = mkdtempSync(join(tmpdir(), 'ortllm-tok-parity-'));
  const vocabularies: [string, Record<string, GgufTypedValue>][] = [
    ['qwen2', bpeVocabulary('qwen2')], ['llama-bpe', bpeVocabulary('llama-bpe')], ['gpt-4o', bpeVocabulary('gpt-4o')],
    ['tekken', bpeVocabulary('tekken')], ['gpt-2', bpeVocabulary('gpt-2')], ['smollm', bpeVocabulary('smollm')],
    ['gemma-spm', gemmaVocabulary()],
  ];
  let ok = true;
  try {
    for (const [i, [name, vocab]] of vocabularies.entries()) {
      const config = llamaConfig({ vocabSize: (vocab['tokenizer.ggml.tokens'].value as string[]).length });
      const path = join(dir, `${name}.gguf`);
      writeModelGguf(path, config, lazyRandomTensors(config, 7), vocab, 'f32', `tok-${name}`);
      ok = (await compare(name, path, server, 18300 + i)) && ok;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  process.exitCode = ok ? 0 : 1;
}

void main();
