#!/usr/bin/env node
// bin `ortllm`: `ortllm serve [MODEL] [flags]` (npm start -- FLAGS is the same).

import 'reflect-metadata';
import { runProgram } from './cli/program';
import { serve } from './cli/serve';

runProgram(process.argv, serve).then(
  (code) => {
    if (code !== 0) process.exit(code);
  },
  (err: unknown) => {
    process.stderr.write(`ortllm: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  },
);
