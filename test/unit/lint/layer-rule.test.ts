// The layer rule of eslint.config.mjs (docs/architecture.md) on planted files: an upward import
// and a Nest import below src/common fail `npm run lint`, also from folders that do not exist yet;
// a downward import passes. Runs the eslint CLI as `npm run lint` does.

import { execFile } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { promisify } from 'node:util';

const ROOT = join(__dirname, '..', '..', '..');
const ESLINT_BIN = join(ROOT, 'node_modules', 'eslint', 'bin', 'eslint.js');
const TAG = `layer-probe-${process.pid}`;

interface Probe {
  /** Repository-relative path of the planted file. */
  file: string;
  source: string;
  /** The file sits in a folder of its own, removed with it afterwards. */
  newFolder?: boolean;
}

const probes = {
  engineImportsModules: {
    file: `src/engine/${TAG}.ts`,
    source: "import { ENGINE_CLIENT } from '../modules/engine/engine.tokens';\nexport const probe = ENGINE_CLIENT;\n",
  },
  newModelFolderImportsEngine: {
    file: `src/model/${TAG}-architectures/probe.ts`,
    newFolder: true,
    source: "import { RequestValidationError } from '../../engine/errors';\nexport const probe = RequestValidationError;\n",
  },
  servingImportsNest: {
    file: `src/serving/${TAG}.ts`,
    source: "import { Injectable } from '@nestjs/common';\nexport const probe = Injectable;\n",
  },
  newServingFolderImportsDownward: {
    file: `src/serving/${TAG}-tool-parsers/probe.ts`,
    newFolder: true,
    source: "import { RequestValidationError } from '../../engine/errors';\nexport const probe = RequestValidationError;\n",
  },
} satisfies Record<string, Probe>;

interface LintMessage {
  ruleId: string | null;
  message: string;
}

const LAYER_RULES = ['import-x/no-restricted-paths', '@typescript-eslint/no-restricted-imports'];

describe('layer rule (eslint.config.mjs)', () => {
  const results = new Map<string, LintMessage[]>();
  const planted: string[] = [];

  beforeAll(async () => {
    for (const probe of Object.values(probes) as Probe[]) {
      const path = join(ROOT, probe.file);
      mkdirSync(dirname(path), { recursive: true });
      planted.push(probe.newFolder ? dirname(path) : path);
      writeFileSync(path, probe.source);
    }
    const files = Object.values(probes).map((p) => p.file);
    // eslint exits 1 when it reports errors; the JSON report is on stdout either way.
    const stdout = await promisify(execFile)(process.execPath, [ESLINT_BIN, '--format', 'json', ...files], { cwd: ROOT, maxBuffer: 16 << 20 })
      .then((r) => r.stdout)
      .catch((err: { code?: number; stdout?: string }) => {
        if (err.code !== 1 || !err.stdout) throw err;
        return err.stdout;
      });
    for (const result of JSON.parse(stdout) as { filePath: string; messages: LintMessage[] }[]) {
      results.set(relative(ROOT, result.filePath), result.messages);
    }
  }, 180_000);

  afterAll(() => {
    for (const path of planted) rmSync(path, { recursive: true, force: true });
  });

  const layerErrors = (probe: Probe) => (results.get(probe.file) ?? []).filter((m) => m.ruleId && LAYER_RULES.includes(m.ruleId));

  it('linted every planted file', () => {
    expect([...results.keys()].sort()).toEqual(Object.values(probes).map((p) => p.file).sort());
  });

  it('fails an engine file that imports src/modules', () => {
    const errors = layerErrors(probes.engineImportsModules);
    expect(errors.map((e) => e.ruleId)).toEqual(['import-x/no-restricted-paths']);
    expect(errors[0].message).toContain('src/engine may import only src/engine, src/model');
  });

  it('fails an upward import from a folder the config has never heard of', () => {
    const errors = layerErrors(probes.newModelFolderImportsEngine);
    expect(errors.map((e) => e.ruleId)).toEqual(['import-x/no-restricted-paths']);
    expect(errors[0].message).toContain('src/model may import only src/model');
  });

  it('fails a Nest import below src/common', () => {
    expect(layerErrors(probes.servingImportsNest).map((e) => e.ruleId)).toEqual(['@typescript-eslint/no-restricted-imports']);
  });

  it('passes a downward import from a new folder', () => {
    expect(results.get(probes.newServingFolderImportsDownward.file)).toEqual([]);
  });
});
