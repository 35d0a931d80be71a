// `ortllm models [DIR]`: the models DIR holds that `ortllm serve` can run (GGUF files and
// Hugging Face directories), one table row each, then the exact serve line for each. Entries
// that look like models but fail serve's checks go to stderr with the reason.

import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import { modelCandidates, summarizeModel, type ModelSummary } from '../model/inspect/model-summary';
import { CommandError } from './program';

function humanCount(n: number | null): string {
  if (n === null) return '?';
  if (n >= 1e9) return `${(n / 1e9).toFixed(1)}B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(1)}M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)}K`;
  return String(n);
}

function humanBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

const shellQuote = (s: string): string => (/^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`);

export function serveLine(m: ModelSummary): string {
  return `ortllm serve ${shellQuote(m.path)} --served-model-name ${shellQuote(m.name)} --max-model-len ${m.contextLength}`;
}

export async function listModels(dirArg: string): Promise<void> {
  const dir = resolve(dirArg);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new CommandError(`${dirArg} is not a directory`);
  const models: ModelSummary[] = [];
  for (const path of modelCandidates(dir)) {
    try {
      models.push(await summarizeModel(path));
    } catch (err) {
      process.stderr.write(`skipped ${path}: ${(err as Error).message}\n`);
    }
  }
  if (models.length === 0) {
    process.stdout.write(`No models that ortllm serve can run in ${dir}\n`);
    return;
  }
  const rows = [
    ['NAME', 'FORMAT', 'ARCH', 'PARAMS', 'QUANT', 'CONTEXT', 'SIZE'],
    ...models.map((m) => [m.name, m.format, m.architecture, humanCount(m.parameters), m.quantization, String(m.contextLength), humanBytes(m.sizeBytes)]),
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  for (const r of rows) process.stdout.write(`${r.map((cell, c) => cell.padEnd(widths[c])).join('  ').trimEnd()}\n`);
  process.stdout.write('\n');
  for (const m of models) process.stdout.write(`${serveLine(m)}\n`);
}
