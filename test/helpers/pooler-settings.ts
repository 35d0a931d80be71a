// PoolerSettings for tests that need a pooling model's serving settings without loading one.
import type { PoolerSettings } from '../../src/model/types';

/** An embedding model's settings (MEAN pooling, normalised, no Matryoshka); override what a test varies. */
export function poolerSettings(overrides: Partial<PoolerSettings> = {}): PoolerSettings {
  return {
    task: 'embed',
    pooling: 'MEAN',
    normalize: true,
    dimensions: null,
    matryoshka: false,
    matryoshkaDimensions: null,
    enableChunkedProcessing: false,
    maxEmbedLen: null,
    activation: 'softmax',
    labels: ['LABEL_0', 'LABEL_1'],
    sentencePairs: true,
    lowerCaseInputs: false,
    ...overrides,
  };
}
