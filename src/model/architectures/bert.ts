// BERT encoders: BertModel embedders (all-MiniLM, bge-small/base, e5) and
// BertForSequenceClassification cross-encoders (ms-marco MiniLM rerankers).
import { encoderDescriptor, tanhThenLinear } from './encoder-family';

export const bert = encoderDescriptor({
  name: 'bert',
  modelTypes: ['bert'],
  checkpointPrefix: 'bert.',
  positionOffset: () => 0,
  // BertForSequenceClassification: classifier(dropout(tanh(pooler.dense(h_CLS)))).
  classifier: tanhThenLinear('pooler.dense', 'classifier'),
});
