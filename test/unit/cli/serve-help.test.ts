// `ortllm serve --help` and `run-batch --help` stay byte-identical to the text captured before the
// flags were declared in one table (fixtures/), and docs/serve-flags.md's flag table stays what flag-table prints.
// After changing a flag's help on purpose: `npm run build`, then
// `node dist/src/main.js serve --help > test/unit/cli/fixtures/serve-help.txt` (run-batch likewise).

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { runProgram } from '../../../src/cli/program';
import { flagTableMarkdown } from '../../../src/config/flag-table';

async function helpOf(command: string): Promise<string> {
  let stdout = '';
  const write = process.stdout.write.bind(process.stdout);
  const columns = process.stdout.columns;
  // The fixtures were captured with stdout redirected to a file (no terminal width to wrap to).
  Object.defineProperty(process.stdout, 'columns', { value: undefined, configurable: true, writable: true });
  process.stdout.write = ((chunk: string) => {
    stdout += chunk;
    return true;
  });
  try {
    expect(await runProgram(['node', 'ortllm', command, '--help'], async () => undefined)).toBe(0);
    return stdout;
  } finally {
    process.stdout.write = write;
    Object.defineProperty(process.stdout, 'columns', { value: columns, configurable: true, writable: true });
  }
}

const fixture = (name: string): string => readFileSync(join(__dirname, 'fixtures', name), 'utf8');

describe('help text of the serve flags', () => {
  it('serve --help is unchanged, line for line', async () => {
    expect((await helpOf('serve')).split('\n')).toEqual(fixture('serve-help.txt').split('\n'));
  });

  it('run-batch --help is unchanged, line for line', async () => {
    expect((await helpOf('run-batch')).split('\n')).toEqual(fixture('run-batch-help.txt').split('\n'));
  });

  it("docs/serve-flags.md's flag table is exactly what flag-table prints", () => {
    const page = readFileSync(join(__dirname, '../../../docs/serve-flags.md'), 'utf8');
    const table = flagTableMarkdown();
    expect(table.split('\n')[0]).toBe('| Flag | Policy | Default | Meaning |');
    expect(page.includes(table)).toBe(true);
  });
});
