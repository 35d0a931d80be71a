// POST /classify: each input's class probabilities (the model's activation over the classifier
// logits) and the most likely label, as vLLM's ServingClassification answers.

import type { UsageInfo } from '../usage';
import { encodeAll } from './encode-all';
import { classProbabilities } from './pooled-vectors';
import { contextTooLong, preparePoolingPrompts, type PoolingInputFields } from './pooling-input';
import { PoolingServingBase, useActivation, type PoolingRequestCommon } from './pooling-serving-base';

export interface ClassifyRequestBody extends PoolingInputFields, PoolingRequestCommon {
  use_activation?: boolean | null;
  activation?: boolean | null;
  softmax?: boolean | null;
}

export interface ClassificationData {
  index: number;
  label: string | null;
  probs: number[];
  num_classes: number;
}

export interface ClassificationResponse {
  id: string;
  object: 'list';
  created: number;
  model: string;
  data: ClassificationData[];
  usage: UsageInfo;
}

export class ClassifyServing extends PoolingServingBase {
  async create(body: ClassifyRequestBody, idBase: string, signal?: AbortSignal): Promise<ClassificationResponse> {
    const ctx = this.begin(body, idBase, 'classify', ['classify']);
    const prompts = await preparePoolingPrompts(body, this.engine, {
      trustRequestChatTemplate: this.opts.trustRequestChatTemplate,
      maxTokens: this.engine.maxModelLen,
      tooLong: contextTooLong,
    });
    const outputs = await encodeAll(this.engine, prompts, { requestId: ctx.id, priority: ctx.priority, signal });
    const activate = useActivation(body);
    return {
      id: ctx.id,
      object: 'list',
      created: ctx.created,
      model: ctx.model,
      data: outputs.map((o, index) => {
        const probs = classProbabilities(o.data, ctx.pooler.activation, activate);
        return { index, label: ctx.pooler.labels[argmax(probs)] ?? null, probs, num_classes: probs.length };
      }),
      usage: this.usage(outputs.reduce((n, o) => n + o.promptTokenIds.length, 0)),
    };
  }
}

function argmax(values: number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i] > values[best]) best = i;
  return best;
}
