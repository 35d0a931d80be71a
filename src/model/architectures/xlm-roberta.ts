// XLM-RoBERTa encoders: XLMRobertaModel embedders (bge-m3, multilingual-e5) and
// XLMRobertaForSequenceClassification cross-encoders (bge-reranker).
import { encoderDescriptor, tanhThenLinear } from './encoder-family';

export const xlmRoberta = encoderDescriptor({
  name: 'xlm-roberta',
  modelTypes: ['xlm-roberta', 'roberta'],
  checkpointPrefix: 'roberta.',
  // RoBERTa numbers positions from padding_idx + 1 (transformers' create_position_ids_from_input_ids).
  positionOffset: (json) => (typeof json.pad_token_id === 'number' ? json.pad_token_id : 1) + 1,
  // RobertaClassificationHead: out_proj(tanh(dense(h_CLS))), no separate pooler.
  classifier: tanhThenLinear('classifier.dense', 'classifier.out_proj'),
});
