// The text workers: large tokenize / render / decode jobs run on a worker thread with its own
// copy of the tokenizer and template and give exactly what the inline path gives; small jobs stay
// inline; template errors keep their class across the thread boundary.

import { ChatTemplateError } from '../../../src/model/chat-template';
import { loadModel } from '../../../src/model/load-model';
import type { LoadModelOptions } from '../../../src/model/types';
import { PromptTooLongError } from '../../../src/engine/errors';
import { InlineTextProcessor, PooledTextProcessor, spawnTextWorkers } from '../../../src/engine/text/text-processor';

const DUMMY: LoadModelOptions = { model: null, loadFormat: 'auto', loadWeights: false, skipTokenizer: false, chatTemplate: null, generationConfig: 'auto' };

describe('PooledTextProcessor', () => {
  let pool: PooledTextProcessor;
  let inline: InlineTextProcessor;

  beforeAll(async () => {
    const model = await loadModel(DUMMY);
    inline = new InlineTextProcessor(model.tokenizer!, model.chatTemplate);
    pool = new PooledTextProcessor(model.tokenizer!, model.chatTemplate, await spawnTextWorkers(DUMMY, 2));
  }, 60_000);
  afterAll(() => pool.shutdown());

  const long = 'Once upon a time, there was a little robot. '.repeat(2000);
  const conversations = Array.from({ length: 40 }, (_, i) => [
    { role: 'system', content: 'Be brief.' },
    { role: 'user', content: `Story ${i}: ${long.slice(0, 500)}` },
  ]);
  const renderOpts = { addGenerationPrompt: true, continueFinalMessage: false };

  it('runs large jobs on a worker, with the same results as inline', async () => {
    const before = pool.offThreadJobs;
    expect(await pool.encode([long, 'short'], true)).toEqual(await inline.encode([long, 'short'], true));
    const ids = (await inline.encode([long], false))[0];
    expect(await pool.decode(ids)).toBe(await inline.decode(ids));
    expect(await pool.renderChat(conversations, renderOpts, { addSpecialTokens: false })).toEqual(
      await inline.renderChat(conversations, renderOpts, { addSpecialTokens: false }),
    );
    expect(pool.offThreadJobs - before).toBe(3);
  });

  it('keeps small jobs inline', async () => {
    const before = pool.offThreadJobs;
    expect(await pool.encode(['hello'], true)).toEqual(await inline.encode(['hello'], true));
    await pool.renderChat([[{ role: 'user', content: 'hi' }]], renderOpts, null);
    expect(pool.offThreadJobs).toBe(before);
  });

  it('rejects a template that does not parse with ChatTemplateError, from a worker too', async () => {
    const bad = { ...renderOpts, template: '{% for x in %}' };
    await expect(pool.renderChat(conversations, bad, null)).rejects.toBeInstanceOf(ChatTemplateError);
    await expect(pool.renderChat(conversations, bad, null)).rejects.toThrow(/invalid chat template/);
  });

  it('spreads concurrent jobs over the workers', async () => {
    const before = pool.offThreadJobs;
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => pool.encode([`${i} ${long}`], true)));
    expect(results.map((r) => r[0].length)).toEqual(await Promise.all(Array.from({ length: 6 }, async (_, i) => (await inline.encode([`${i} ${long}`], true))[0].length)));
    expect(pool.offThreadJobs - before).toBe(6);
  });

  it('refuses a text past the token limit after a prefix, from a worker too, and keeps one under it exact', async () => {
    const huge = long.repeat(20);
    const refused = pool.encode([huge], true, 2048);
    await expect(refused).rejects.toBeInstanceOf(PromptTooLongError);
    expect(((await refused.catch((e: unknown) => e)) as PromptTooLongError).atLeast).toBeGreaterThanOrEqual(2048);
    const fits = long.slice(0, 3000);
    expect(await pool.encode([fits], true, 2048)).toEqual(await inline.encode([fits], true));
  });

  it('runs a normal job while huge ones hold the workers, never queueing it behind them', async () => {
    const finished: string[] = [];
    const huge = (i: number) => pool.encode([`${i} ${long.repeat(8)}`], true).then(() => finished.push(`huge ${i}`));
    const hugeJobs = [huge(0), huge(1), huge(2)];
    await new Promise((r) => setTimeout(r, 20));
    await pool.encode([long.slice(0, 8000)], true).then(() => finished.push('normal'));
    await Promise.all(hugeJobs);
    expect(finished[0]).toBe('normal');
  }, 60_000);
});
