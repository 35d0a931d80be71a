// What loadModel makes of a GGUF's vocabulary at start-up: an unknown pre-tokenizer refused by
// name, a harmony vocabulary rendered in harmony, turn-ending tokens added to the stop ids.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomDecoderWeights } from '../../../src/model/dummy/random-weights';
import { writeModelGguf } from '../../../src/model/gguf/write-model';
import { gv } from '../../../src/model/gguf/writer';
import { loadModel } from '../../../src/model/load-model';
import { BYTE_TO_CHAR } from '../../../src/model/tokenizer/byte-level';
import type { DecoderArchConfig } from '../../../src/model/types';
import { loadOptions } from '../../helpers/model-files';

const HARMONY = ['<|startoftext|>', '<|return|>', '<|constrain|>', '<|channel|>', '<|start|>', '<|end|>', '<|message|>', '<|call|>'];
const TOKENS = [...BYTE_TO_CHAR, ...HARMONY];
const config: DecoderArchConfig = {
  architecture: 'llama', hiddenSize: 32, intermediateSize: 64, numLayers: 1, numHeads: 2, numKvHeads: 1, headDim: 16,
  vocabSize: TOKENS.length, rmsNormEps: 1e-5, ropeTheta: 10000, ropeScaling: null, maxPositionEmbeddings: 256,
  tieWordEmbeddings: true, attentionBias: false,
};

let dir: string;
beforeAll(() => (dir = mkdtempSync(join(tmpdir(), 'ortllm-vocab-load-'))));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function writeModel(name: string, pre: string): string {
  const path = join(dir, `${name}.gguf`);
  writeModelGguf(path, config, randomDecoderWeights(config, 3), {
    'tokenizer.ggml.model': gv.str('gpt2'),
    'tokenizer.ggml.pre': gv.str(pre),
    'tokenizer.ggml.tokens': gv.strings(TOKENS),
    'tokenizer.ggml.token_type': gv.i32s(TOKENS.map((_, i) => (i < 256 ? 1 : 3))),
    'tokenizer.ggml.merges': gv.strings([]),
    'tokenizer.ggml.eos_token_id': gv.u32(TOKENS.indexOf('<|return|>')),
    'tokenizer.ggml.add_bos_token': gv.bool(false),
  }, 'f32');
  return path;
}

describe('loadModel and GGUF vocabularies', () => {
  it('refuses an unknown tokenizer.ggml.pre at start-up, naming it', async () => {
    await expect(loadModel(loadOptions(writeModel('unknown', 'chatglm-bpe'), { loadWeights: false })))
      .rejects.toThrow(/tokenizer\.ggml\.pre='chatglm-bpe'/);
  });

  it('renders a harmony vocabulary in harmony and stops at <|return|> and <|call|>, not <|end|>', async () => {
    const model = await loadModel(loadOptions(writeModel('harmony', 'gpt-4o'), { loadWeights: false }));
    expect(model.eosTokenIds.sort()).toEqual([TOKENS.indexOf('<|return|>'), TOKENS.indexOf('<|call|>')].sort());
    const prompt = model.chatTemplate!.render([{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true, continueFinalMessage: false });
    expect(prompt.startsWith('<|start|>system<|message|>')).toBe(true);
    expect(prompt.endsWith('<|start|>user<|message|>Hi<|end|><|start|>assistant')).toBe(true);
    // A template given on the command line wins over harmony.
    const given = await loadModel(loadOptions(writeModel('harmony-jinja', 'gpt-4o'), { loadWeights: false, chatTemplate: '{{ messages[0].content }}' }));
    expect(given.chatTemplate!.render([{ role: 'user', content: 'Hi' }], { addGenerationPrompt: true, continueFinalMessage: false })).toBe('Hi');
  });
});
