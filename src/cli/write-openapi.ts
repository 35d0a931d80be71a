// `npm run openapi`: writes openapi/openapi.json from the controllers and DTOs, with every
// route family registered and keys sorted, so the committed file diffs cleanly. The app is
// built in Nest's preview mode: modules are scanned, no provider (and so no engine) is created.
// Usage: node dist/src/cli/write-openapi.js [output path]

import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { createApp } from '../app-factory';
import { resolveServerConfig } from '../config/server-config';
import { buildOpenApiDocument, sortKeysDeep } from '../modules/docs/openapi';

export const DEFAULT_OPENAPI_PATH = resolve(__dirname, '../../../openapi/openapi.json');

/** The spec as the committed file holds it (sorted, 2-space JSON, trailing newline). */
export async function renderOpenApiSpec(): Promise<string> {
  const config = resolveServerConfig({ disableUvicornAccessLog: true, logLevel: 'error' }, {});
  const app = await createApp(config, { allFeatures: true, preview: true });
  try {
    return `${JSON.stringify(sortKeysDeep(buildOpenApiDocument(app, config)), null, 2)}\n`;
  } finally {
    await app.close();
  }
}

if (require.main === module) {
  const out = resolve(process.argv[2] ?? DEFAULT_OPENAPI_PATH);
  renderOpenApiSpec().then(
    (spec) => {
      writeFileSync(out, spec);
      process.stdout.write(`wrote ${out}\n`);
    },
    (err: unknown) => {
      process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
      process.exit(1);
    },
  );
}
