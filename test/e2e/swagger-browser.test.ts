// The Swagger UI as its users explore it, in a real browser (playwright-core driving Debian's
// /usr/bin/chromium): open /docs on a server started with --api-key, authorize with the key,
// "Try it out" on GET /v1/models, and see a 200 listing the model.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, BrowserContext } from 'playwright-core';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServer, TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';

const CHROMIUM = '/usr/bin/chromium';
const API_KEY = 'browser-key';
const MODEL_NAME = 'stories-in-browser';
const model = defaultTestModel();

const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

needs(model, CHROMIUM).describe('Swagger UI in a real browser', () => {
  let server: TestServer;
  let context: BrowserContext;
  let profile: string;

  beforeAll(async () => {
    server = await startServer(['--api-key', API_KEY, '--served-model-name', MODEL_NAME]);
    profile = mkdtempSync(join(tmpdir(), 'ortllm-chromium-'));
    // A persistent context is how playwright takes a fresh --user-data-dir.
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: CHROMIUM_ARGS,
      timeout: 60_000,
    });
  }, SERVER_START_TIMEOUT_MS);

  afterAll(async () => {
    await context?.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
    await server?.stop();
  });

  it('authorizes with the key and runs "Try it out" on GET /v1/models', async () => {
    const page = await context.newPage();
    const pageErrors: string[] = [];
    page.on('pageerror', (err) => pageErrors.push(err.message));
    await page.goto(`${server.baseUrl}/docs`, { waitUntil: 'load' });

    // Authorize: the bearer scheme's dialog takes the raw key.
    await page.locator('button.authorize').first().click();
    const dialog = page.locator('.modal-ux');
    await dialog.locator('input').first().fill(API_KEY);
    await dialog.locator('.auth-btn-wrapper button.authorize').click();
    await dialog.locator('button.btn-done').click();

    const operation = page.locator('#operations-models-showAvailableModels');
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    await operation.locator('button.execute').click();

    const status = operation.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 30_000 });
    expect((await status.innerText()).trim()).toBe('200');
    const body = await operation.locator('.live-responses-table .response-col_description pre').first().innerText();
    const parsed = JSON.parse(body);
    expect(parsed.object).toBe('list');
    expect(parsed.data[0].id).toBe(MODEL_NAME);
    // The curl the UI shows carries the key, as the user would copy it.
    expect(await operation.locator('.curl-command').innerText()).toContain(`Authorization: Bearer ${API_KEY}`);
    expect(pageErrors).toEqual([]);
  }, 120_000);
});
