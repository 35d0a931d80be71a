// The Swagger UI as its users explore it, in a real browser (playwright-core driving Debian's
// /usr/bin/chromium): open /docs on a server started with --api-key, authorize with the key,
// "Try it out" on GET /v1/models, POST /v1/completions and POST /v1/chat/completions, Execute
// without editing the pre-filled body, and see a 200 with generated text.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, BrowserContext, type Page } from 'playwright-core';
import { defaultTestModel, SERVER_START_TIMEOUT_MS, startServer, TestServer } from '../helpers/server';
import { needs } from '../helpers/needs';

const CHROMIUM = '/usr/bin/chromium';
const API_KEY = 'browser-key';
const MODEL_NAME = 'stories-in-browser';
const model = defaultTestModel();

/** stories260K has no chat template of its own. */
const CHAT_TEMPLATE = '{% for m in messages %}{{ m.content }} {% endfor %}';

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
    server = await startServer(['--api-key', API_KEY, '--served-model-name', MODEL_NAME, '--chat-template', CHAT_TEMPLATE]);
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

  /** Opens an operation, clicks "Try it out" and Execute as they stand; returns its status and response body. */
  async function tryItOut(page: Page, operationId: string): Promise<{ status: string; body: string; curl: string }> {
    const operation = page.locator(`#${operationId}`);
    await operation.locator('.opblock-summary').click();
    await operation.locator('button.try-out__btn').click();
    await operation.locator('button.execute').click();
    const status = operation.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 60_000 });
    return {
      status: (await status.innerText()).trim(),
      body: await operation.locator('.live-responses-table .response-col_description pre').first().innerText(),
      curl: await operation.locator('.curl-command').innerText(),
    };
  }

  it('authorizes with the key and runs "Try it out" unedited on models, completions and chat', async () => {
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

    const models = await tryItOut(page, 'operations-models-showAvailableModels');
    expect(models.status).toBe('200');
    const list = JSON.parse(models.body);
    expect(list.object).toBe('list');
    expect(list.data[0].id).toBe(MODEL_NAME);
    // The curl the UI shows carries the key, as the user would copy it.
    expect(models.curl).toContain(`Authorization: Bearer ${API_KEY}`);

    // The pre-filled bodies are the spec's examples, naming the served model.
    const completion = await tryItOut(page, 'operations-completions-createCompletion');
    expect([completion.status, completion.body.slice(0, 300)]).toEqual(['200', expect.any(String)]);
    const text = JSON.parse(completion.body);
    expect(text.model).toBe(MODEL_NAME);
    expect(text.choices[0].text).toMatch(/\S/);

    const chat = await tryItOut(page, 'operations-chat-createChatCompletion');
    expect([chat.status, chat.body.slice(0, 300)]).toEqual(['200', expect.any(String)]);
    const message = JSON.parse(chat.body);
    expect(message.object).toBe('chat.completion');
    expect(message.choices[0].message.content).toMatch(/\S/);
    expect(pageErrors).toEqual([]);
  }, 180_000);
});
