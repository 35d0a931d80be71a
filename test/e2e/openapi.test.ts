// The committed OpenAPI spec: (1) `npm run openapi` regenerates exactly openapi/openapi.json;
// (2) a typed client generated from it with openapi-typescript + openapi-fetch type-checks
// (strict) and talks to the running server.

import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultTestModel, ensureBuilt, REPO_ROOT, SERVER_START_TIMEOUT_MS, startServer, TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';

const SPEC = join(REPO_ROOT, 'openapi/openapi.json');
const WORK_DIR = join(REPO_ROOT, 'dist/e2e-openapi');
const model = defaultTestModel();

function run(args: string[]): { status: number | null; output: string } {
  const result = spawnSync(process.execPath, args, { cwd: REPO_ROOT, encoding: 'utf8', timeout: 120_000 });
  return { status: result.status, output: `${result.stdout}${result.stderr}` };
}

/** A client program written against the generated types; tsc must accept it under --strict. */
const CLIENT_SOURCE = `
import createClient from 'openapi-fetch';
import type { paths } from './ortllm-api';

export async function useClient(baseUrl: string, apiKey: string) {
  const client = createClient<paths>({ baseUrl, headers: { Authorization: \`Bearer \${apiKey}\` } });
  const models = await client.GET('/v1/models');
  if (!models.data) throw new Error('GET /v1/models failed: ' + models.response.status);
  const ids: string[] = models.data.data.map((card) => card.id);
  const maxModelLen: number | null | undefined = models.data.data[0].max_model_len;
  const version = await client.GET('/version');
  const completion = await client.POST('/v1/completions', {
    body: { model: ids[0], prompt: 'Once upon a time', max_tokens: 4, temperature: 0 },
  });
  const unauthorized = await createClient<paths>({ baseUrl }).GET('/v1/models');
  return {
    ids,
    maxModelLen,
    version: version.data?.version,
    completionStatus: completion.response.status,
    completion: completion.data as unknown,
    unauthorizedStatus: unauthorized.response.status,
  };
}
`;

describe('OpenAPI spec', () => {
  beforeAll(async () => {
    await ensureBuilt();
    mkdirSync(WORK_DIR, { recursive: true });
  }, SERVER_START_TIMEOUT_MS);

  it('is in sync with the code (run `npm run openapi` and commit when this fails)', () => {
    const fresh = join(WORK_DIR, 'openapi.json');
    const result = run([join(REPO_ROOT, 'dist/src/cli/write-openapi.js'), fresh]);
    expect(result.status).toBe(0);
    const committed = readFileSync(SPEC, 'utf8');
    const regenerated = readFileSync(fresh, 'utf8');
    if (regenerated !== committed) {
      const a = committed.split('\n');
      const b = regenerated.split('\n');
      const first = a.findIndex((line, i) => line !== b[i]);
      throw new Error(`openapi/openapi.json is stale (first difference at line ${first + 1}):\n- ${a[first]}\n+ ${b[first]}\nRun \`npm run openapi\`.`);
    }
  }, 120_000);

  needs(model).describe('generated typed client', () => {
    let server: TestServer;
    beforeAll(async () => {
      server = await startServer(['--api-key', 'client-key', '--served-model-name', 'stories']);
    }, SERVER_START_TIMEOUT_MS);
    afterAll(() => server?.stop());

    it('generates, type-checks and calls the running server', async () => {
      const generated = run([
        join(REPO_ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
        SPEC,
        // Request fields with a server-side default stay optional for the caller.
        '--default-non-nullable=false',
        '--output',
        join(WORK_DIR, 'ortllm-api.d.ts'),
      ]);
      expect(generated.status).toBe(0);
      writeFileSync(join(WORK_DIR, 'use-client.ts'), CLIENT_SOURCE);
      const typecheck = run([
        join(REPO_ROOT, 'node_modules/typescript/bin/tsc'),
        '--noEmit', '--strict', '--target', 'ES2022', '--module', 'commonjs', '--moduleResolution', 'node',
        '--esModuleInterop', '--skipLibCheck', '--types', 'node', '--lib', 'ES2022,DOM',
        join(WORK_DIR, 'use-client.ts'),
      ]);
      expect(typecheck.output).toBe('');
      expect(typecheck.status).toBe(0);

      const { useClient } = (await import(join(WORK_DIR, 'use-client.ts'))) as {
        useClient: (baseUrl: string, key: string) => Promise<Record<string, unknown>>;
      };
      const result = await useClient(server.baseUrl, 'client-key');
      expect(result.ids).toEqual(['stories']);
      expect(result.maxModelLen).toBeGreaterThan(0);
      expect(result.version).toMatch(/^\d+\.\d+\.\d+/);
      expect(result.completionStatus).toBe(200);
      expect(result.completion).toMatchObject({ object: 'text_completion', model: 'stories' });
      expect(result.unauthorizedStatus).toBe(401);
    }, 120_000);
  });
});
