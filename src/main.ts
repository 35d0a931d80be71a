#!/usr/bin/env node
// bin `ortllm`: `ortllm serve [MODEL] [flags]` (npm start -- FLAGS is the same).

import 'reflect-metadata';
import { runProgram } from './cli/program';

// The server (Nest, onnxruntime) loads only once the flags are valid, so --help and usage
// errors answer at once.
const serve = async (config: Parameters<typeof import('./cli/serve').serve>[0]): Promise<void> =>
  (await import('./cli/serve')).serve(config);

runProgram(process.argv, serve).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (err: unknown) => {
    // Start-up failures (missing model, port in use): one clear line; Nest has logged the stack.
    process.stderr.write(`ortllm: failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
