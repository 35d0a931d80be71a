// Entry point of the model runner: picks the runner for what the model returns (model.output):
// the built-graph runner or the ONNX-export runner for logits, the encoder-decoder runner for
// transcription (the architecture's encoderDecoder graphs).
import { LoadedModel, ModelRunner, RunnerOptions } from '../types';
import { createExportRunner } from './export-runner';
import { createGraphRunner } from './graph-runner';
import { createWhisperRunner } from './whisper-runner';

export { kvBytesPerBlock } from './kv-cache';

export async function createRunner(model: LoadedModel, opts: RunnerOptions): Promise<ModelRunner> {
  if (model.weights) return model.output.kind === 'transcription' ? createWhisperRunner(model, opts) : createGraphRunner(model, opts);
  if (model.onnxPath) return createExportRunner(model, opts);
  throw new Error(`model ${model.source}: no weights to build a graph from, and no ONNX file`);
}
