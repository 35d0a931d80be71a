// `--model builtin:<name>`: today's dummy as builtin:llama, the Whisper dummy as builtin:whisper-tiny,
// and the route choice (text or speech) made from the model before it loads.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DUMMY_CONFIG } from '../../../src/model/dummy/dummy-model';
import { loadModel } from '../../../src/model/load-model';
import { modelTask } from '../../../src/model/model-task';
import { loadOptions } from '../../helpers/model-files';
import { tempDir } from '../../helpers/speech';

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

  it('chooses speech routes for Whisper (built-in or a directory with model_type whisper) and text routes otherwise', () => {
    const dir = tempDir('ortllm-task-');
    try {
      const whisper = join(dir.path, 'w');
      mkdirSync(whisper);
      writeFileSync(join(whisper, 'config.json'), JSON.stringify({ model_type: 'whisper' }));
      expect(modelTask({ model: 'builtin:whisper-tiny', loadFormat: 'auto' })).toBe('transcription');
      expect(modelTask({ model: whisper, loadFormat: 'auto' })).toBe('transcription');
      expect(modelTask({ model: whisper, loadFormat: 'dummy' })).toBe('generate');
      expect(modelTask({ model: null, loadFormat: 'auto' })).toBe('generate');
      expect(modelTask({ model: 'builtin:llama', loadFormat: 'auto' })).toBe('generate');
    } finally {
      dir.remove();
    }
  });
});
