// The built-in dummy model: deterministic seeded weights, built-in tokenizer and template, fast.
import { decoderWeightSpecs } from '../../../src/model/architectures/decoder-family';
import { DUMMY_CONFIG, dummyWeights } from '../../../src/model/dummy/dummy-model';
import { randomWeight } from '../../../src/model/dummy/random-weights';
import { loadModel } from '../../../src/model/load-model';
import { createBuiltinTokenizer } from '../../../src/model/tokenizer';
import { loadOptions } from '../../helpers/model-files';


const bytesOf = (data: Float32Array) => Buffer.from(data.buffer, data.byteOffset, data.byteLength);

describe('dummy model', () => {
  it('loads in well under 2 s with every decoder weight, sized to the built-in tokenizer', async () => {
    const started = performance.now();
    const model = await loadModel(loadOptions(null));
    expect(performance.now() - started).toBeLessThan(2000);
    expect(model.source).toBe('dummy');
    expect(model.config).toEqual(DUMMY_CONFIG);
    expect(model.config.vocabSize).toBe(createBuiltinTokenizer().vocabSize);
    expect(model.tokenizer!.vocabSize).toBe(model.config.vocabSize);
    const specs = decoderWeightSpecs(DUMMY_CONFIG);
    expect(model.weights!.names().sort()).toEqual(specs.map((s) => s.name).sort());
    for (const spec of specs) expect(model.weights!.get(spec.name).shape).toEqual(spec.shape);
    expect(model.eosTokenIds).toEqual([model.tokenizer!.eosTokenId]);
    expect(model.contextLength).toBe(DUMMY_CONFIG.maxPositionEmbeddings);
    const prompt = model.chatTemplate!.render([{ role: 'user', content: 'hi' }], { addGenerationPrompt: true, continueFinalMessage: false });
    expect(prompt).toBe('<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n');
  });

  it('is deterministic: same seed, same weights; another seed, other weights', () => {
    const a = dummyWeights();
    const b = dummyWeights();
    for (const name of a.names()) {
      const x = a.get(name), y = b.get(name);
      if (x.kind !== 'f32' || y.kind !== 'f32') throw new Error('f32 expected');
      expect(bytesOf(x.data).equals(bytesOf(y.data))).toBe(true);
    }
    const spec = { name: 'model.layers.0.self_attn.q_proj.weight', shape: [256, 256], isNorm: false };
    expect(bytesOf(randomWeight(spec, 1)).equals(bytesOf(randomWeight(spec, 2)))).toBe(false);
    // Different tensors get different streams, values have the intended spread, norms are 1.
    const q = randomWeight(spec, 0);
    const k = randomWeight({ ...spec, name: 'model.layers.0.self_attn.k_proj.weight' }, 0);
    expect(bytesOf(q).equals(bytesOf(k))).toBe(false);
    const std = Math.sqrt(q.reduce((s, v) => s + v * v, 0) / q.length);
    expect(std).toBeGreaterThan(0.019);
    expect(std).toBeLessThan(0.021);
    expect(randomWeight({ name: 'model.norm.weight', shape: [4], isNorm: true }, 0)).toEqual(new Float32Array([1, 1, 1, 1]));
  });

  it('--load-format dummy replaces a given MODEL; loadWeights=false and skipTokenizer skip those parts', async () => {
    const model = await loadModel(loadOptions('/does/not/matter', { loadFormat: 'dummy', loadWeights: false, skipTokenizer: true }));
    expect([model.source, model.weights, model.tokenizer, model.chatTemplate]).toEqual(['dummy', null, null, null]);
    expect(model.config).toEqual(DUMMY_CONFIG);
  });
});
