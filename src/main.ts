#!/usr/bin/env node
// bin `ortllm`: serve, run-batch, bench serve, models (`npm start -- FLAGS` = `ortllm serve FLAGS`).

import 'reflect-metadata';
import { runProgram } from './cli/program';

// The server (Nest, onnxruntime) loads only once the flags are valid, so --help and usage
// errors answer at once.
runProgram(process.argv, {
  serve: async (config, notices) => (await import('./cli/serve')).serve(config, notices),
  runBatch: async (config, notices, args) => (await import('./cli/run-batch')).runBatch(config, notices, args),
  benchServe: async (options) => (await import('./cli/bench-serve')).benchServe(options),
  models: async (dir) => (await import('./cli/list-models')).listModels(dir),
}).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (err: unknown) => {
    // Start-up failures (missing model, port in use): one clear line; Nest has logged the stack.
    process.stderr.write(`ortllm: failed: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
