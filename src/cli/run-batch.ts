// `ortllm run-batch -i IN.jsonl -o OUT.jsonl [serve flags]`: vLLM's offline batch runner. The
// app is built as for `serve` but never listens; every line goes to the engine at once (the
// scheduler batches them), a progress bar runs on stderr (cli-progress), and the output is
// written to a temporary file that is renamed over OUT only when complete.

import { Logger } from '@nestjs/common';
import { Presets, SingleBar } from 'cli-progress';
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { createApp } from '../app-factory';
import type { ServerConfig } from '../config/server-config';
import { jsonLimitsOf } from '../common/body/json-limits';
import { runBatchLine, type BatchOutput, type LineLimits } from './batch/batch-records';
import { CommandError, type RunBatchArgs } from './program';

export async function runBatch(config: ServerConfig, notices: string[], args: RunBatchArgs): Promise<void> {
  const logger = new Logger('run-batch');
  for (const notice of notices) logger.warn(notice);
  const lines = readInput(args.inputFile);
  const output = resolve(args.outputFile);
  const tmpDir = args.outputTmpDir ? resolve(args.outputTmpDir) : dirname(output);
  if (!existsSync(tmpDir) || !statSync(tmpDir).isDirectory()) throw new CommandError(`output directory ${tmpDir} does not exist`);

  const app = await createApp({ ...config, disableUvicornAccessLog: true });
  try {
    await app.init();
    const fastify = app.getHttpAdapter().getInstance();
    await fastify.ready();
    const headers: Record<string, string> = config.apiKeys.length > 0 ? { authorization: `Bearer ${config.apiKeys[0]}` } : {};
    const limits: LineLimits = { maxBytes: config.maxRequestBodyBytes, json: jsonLimitsOf(config) };
    logger.log(`Running ${lines.length} requests from ${args.inputFile}`);
    const bar = new SingleBar(
      {
        stream: process.stderr,
        format: 'Running batch: {percentage}% Completed | {value}/{total} [{duration_formatted}<{eta_formatted}]',
        noTTYOutput: true,
        notTTYSchedule: 5000,
        hideCursor: false,
      },
      Presets.legacy,
    );
    bar.start(lines.length, 0);
    const results = await Promise.all(
      lines.map(async ({ text, lineNo }) => {
        const result = await runBatchLine(fastify, text, lineNo, headers, limits);
        bar.increment();
        return result;
      }),
    );
    bar.stop();
    writeAtomically(output, tmpDir, results);
    const failed = results.filter((r) => r.error !== null).length;
    logger.log(`Wrote ${results.length} results to ${output} (${failed} with an error)`);
  } finally {
    await app.close();
  }
}

function readInput(path: string): Array<{ text: string; lineNo: number }> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new CommandError(`cannot read input file ${path}: ${(err as Error).message}`);
  }
  return text
    .split('\n')
    .map((line, i) => ({ text: line.trim(), lineNo: i + 1 }))
    .filter((l) => l.text.length > 0);
}

/** Temp file in `tmpDir`, fsync, rename: a crash never leaves half an output file. */
function writeAtomically(output: string, tmpDir: string, results: BatchOutput[]): void {
  const tmp = join(tmpDir, `.${basename(output)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fd = openSync(tmp, 'w');
  try {
    for (const r of results) writeSync(fd, `${JSON.stringify(r)}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  try {
    renameSync(tmp, output);
  } catch (err) {
    unlinkSync(tmp);
    throw new CommandError(`cannot write ${output}: ${(err as Error).message}`);
  }
}
