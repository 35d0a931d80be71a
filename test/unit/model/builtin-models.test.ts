// `--model builtin:<name>`: today's dummy as builtin:llama, the Whisper dummy as builtin:whisper-tiny,
// and what a model is served as (transcription or generation), known before it loads.
import { join } from 'node:path';
import { DUMMY_CONFIG } from '../../../src/model/dummy/dummy-model';
import { loadModel, planServedModel } from '../../../src/model/load-model';
import { loadOptions } from '../../helpers/model-files';
import { tempDir } from '../../helpers/speech';
import { writeWhisperDir } from '../../helpers/write-whisper-dir';

describe('built-in models', () => {
  it('builtin:llama is the default dummy model', async () => {
    const model = await loadModel(loadOptions('builtin:llama', { loadWeights: false }));
    expect(model.config).toEqual(DUMMY_CONFIG);
    expect(model.chatTemplate).not.toBeNull();
  });

  it('builtin:whisper-tiny is a whisper-tiny-shaped speech model with Whisper\'s special tokens', async () => {
    const model = await loadModel(loadOptions('builtin:whisper-tiny', { loadWeights: true }));
    expect(model.config).toMatchObject({ architecture: 'whisper', hiddenSize: 384, numLayers: 4, numHeads: 6, maxPositionEmbeddings: 448 });
    expect(model.config.encoder).toMatchObject({ numLayers: 4, numHeads: 6, numMelBins: 80, numPositions: 1500 });
    expect(model.weights!.get('model.encoder.conv1.weight').shape).toEqual([384, 80, 3]);
    expect(model.tokenizer!.decode(model.tokenizer!.encode('<|startoftranscript|><|en|>hi', { addSpecialTokens: false }))).toBe('hi');
    expect(model.eosTokenIds).toEqual([256]);
  });

  it('names the built-in models when given an unknown one', async () => {
    await expect(loadModel(loadOptions('builtin:gpt-9'))).rejects.toThrow(/builtin:llama, builtin:whisper-tiny/);
  });

  it('plans Whisper (built-in, or a directory with model_type whisper) as transcription and the rest as generation', async () => {
    const dir = tempDir('ortllm-task-');
    try {
      writeWhisperDir(join(dir.path, 'w'));
      const planned = async (model: string | null, loadFormat: 'auto' | 'dummy' = 'auto') => (await planServedModel(loadOptions(model, { loadFormat }))).output.kind;
      expect(await planned('builtin:whisper-tiny')).toBe('transcription');
      expect(await planned(join(dir.path, 'w'))).toBe('transcription');
      expect(await planned(join(dir.path, 'w'), 'dummy')).toBe('logits');
      expect(await planned(null)).toBe('logits');
      expect(await planned('builtin:llama')).toBe('logits');
    } finally {
      dir.remove();
    }
  });
});
