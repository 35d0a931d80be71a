// What a model is served as: vLLM's --runner / --convert resolution from the `architectures`
// class suffix, --pooler-config, sentence-transformers files, and the refusals.
import { bert } from '../../../src/model/architectures/bert';
import { llama } from '../../../src/model/architectures/llama';
import { planModel, type PlanInputs } from '../../../src/model/model-plan';
import { DUMMY_CONFIG } from '../../../src/model/dummy/dummy-model';
import type { ModelServingFlags } from '../../../src/model/types';

const AUTO: ModelServingFlags = { runner: 'auto', convert: 'auto', poolerConfig: null };
const bertConfig = { architecture: 'bert', hiddenSize: 8, numLayers: 1, numHeads: 2, numKvHeads: 2, headDim: 4, vocabSize: 10, maxPositionEmbeddings: 16, intermediateSize: 16, layerNormEps: 1e-12, hiddenAct: 'gelu' as const, typeVocabSize: 2, positionOffset: 0 };

function plan(inputs: Partial<Omit<PlanInputs, "flags">> & { flags?: Partial<ModelServingFlags> }) {
  return planModel({
    source: 'm',
    descriptor: llama,
    config: DUMMY_CONFIG,
    configJson: null,
    sentenceTransformers: null,
    ...inputs,
    flags: { ...AUTO, ...inputs.flags },
  });
}

describe('model plan', () => {
  it('follows the architectures class suffix as vLLM does', () => {
    expect(plan({ configJson: { architectures: ['LlamaForCausalLM'] } }).output).toEqual({ kind: 'logits' });
    expect(plan({ configJson: null }).output).toEqual({ kind: 'logits' }); // GGUF: what the architecture does first
    expect(plan({ configJson: { architectures: ['MistralModel'] } }).output).toEqual({ kind: 'pooled', pooling: 'LAST' });
    expect(plan({ descriptor: bert, config: bertConfig, configJson: { architectures: ['BertModel'] } }).output).toEqual({ kind: 'pooled', pooling: 'CLS' });
    const classifier = plan({ descriptor: bert, config: bertConfig, configJson: { architectures: ['BertForSequenceClassification'], id2label: { 1: 'b', 0: 'a' } } });
    expect(classifier.output).toEqual({ kind: 'classifier', pooling: 'CLS', numLabels: 2 });
    expect(classifier.pooler).toMatchObject({ task: 'classify', labels: ['a', 'b'], activation: 'softmax', sentencePairs: true });
    expect(plan({ configJson: { architectures: ['Qwen2ForSequenceClassification'], num_labels: 1 } }).pooler).toMatchObject({
      activation: 'sigmoid',
      labels: ['LABEL_0'],
      sentencePairs: false,
    });
  });

  it('--convert embed|classify and --runner pooling turn a generative model into a pooling one', () => {
    expect(plan({ flags: { convert: 'embed' } }).output).toEqual({ kind: 'pooled', pooling: 'LAST' });
    expect(plan({ flags: { runner: 'pooling' } }).output).toEqual({ kind: 'pooled', pooling: 'LAST' });
    expect(plan({ configJson: { architectures: ['LlamaForCausalLM'], num_labels: 3 }, flags: { convert: 'classify' } }).output).toEqual({
      kind: 'classifier',
      pooling: 'LAST',
      numLabels: 3,
    });
    expect(() => plan({ flags: { runner: 'generate', convert: 'embed' } })).toThrow(/--convert embed needs the pooling runner/);
    expect(() => plan({ flags: { convert: 'reward' } })).toThrow(/reward models .* are not supported/);
    expect(() => plan({ descriptor: bert, config: bertConfig, configJson: { architectures: ['BertModel'] }, flags: { runner: 'generate' } })).toThrow(
      /BertModel does not generate text; serve it with --runner pooling/,
    );
  });

  it('pooling comes from --pooler-config, then the sentence-transformers Pooling module, then the architecture', () => {
    const st = { pooling: 'MEAN' as const, normalize: true, maxSeqLength: 8, doLowerCase: true };
    const fromSt = plan({ descriptor: bert, config: bertConfig, configJson: { architectures: ['BertModel'] }, sentenceTransformers: st });
    expect(fromSt).toMatchObject({ output: { kind: 'pooled', pooling: 'MEAN' }, maxSeqLength: 8, pooler: { lowerCaseInputs: true, normalize: true } });
    const flagged = plan({
      descriptor: bert,
      config: bertConfig,
      configJson: { architectures: ['BertModel'] },
      sentenceTransformers: st,
      flags: { poolerConfig: { pooling_type: 'last', normalize: false } },
    });
    expect(flagged).toMatchObject({ output: { pooling: 'LAST' }, pooler: { normalize: false } });
    expect(() => plan({ flags: { convert: 'embed', poolerConfig: { pooling_type: 'STEP' } } })).toThrow(/pooling_type STEP is not supported/);
  });

  it('checks Matryoshka dimensions and chunked processing at start-up', () => {
    const json = { architectures: ['BertModel'], matryoshka_dimensions: [4, 8] };
    const ok = plan({ descriptor: bert, config: bertConfig, configJson: json, flags: { poolerConfig: { dimensions: 4 } } });
    expect(ok.pooler).toMatchObject({ matryoshka: true, matryoshkaDimensions: [4, 8], dimensions: 4 });
    expect(() => plan({ descriptor: bert, config: bertConfig, configJson: json, flags: { poolerConfig: { dimensions: 5 } } })).toThrow(/dimensions 5/);
    expect(() => plan({ descriptor: bert, config: bertConfig, configJson: { architectures: ['BertModel'] }, flags: { poolerConfig: { dimensions: 4 } } })).toThrow(
      /does not support Matryoshka/,
    );
    expect(() => plan({ descriptor: bert, config: bertConfig, configJson: { architectures: ['BertModel'] }, flags: { poolerConfig: { enable_chunked_processing: true } } })).toThrow(
      /MEAN pooling/,
    );
  });
});
