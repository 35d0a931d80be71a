// The LoRA worker commands end to end: loadLora / unloadLora cross to the engine worker thread,
// a load error comes back with the loader's message, an adapter's request there gives what it
// gives in-process, and adapters survive sleep / wake_up (re-added to the rebuilt runner).

import { join } from 'node:path';
import { createEngine, createInProcessEngine } from '../../../src/engine';
import type { LoraEngineOptions, LoraRequest } from '../../../src/engine/types';
import type { DecoderArchConfig } from '../../../src/model/types';
import { needs } from '../../helpers/needs';
import { tempDirPerSuite } from '../../helpers/lora-files';
import { writeTestAdapter } from '../../helpers/lora-engine-fixtures';
import { engineOptions, finalOutput, loadStories, prompts, request, STORIES } from './engine-fixtures';

const LORA: LoraEngineOptions = { maxLoras: 2, maxRank: 16, maxCpuLoras: 2, dtype: 'auto' };

needs(STORIES).describe('LoRA commands through the engine worker', () => {
  const dir = tempDirPerSuite('lora-worker-');

  it('loads, serves, survives sleep, and unloads an adapter; a bad path rejects with its message', async () => {
    const model = await loadStories();
    const adapter = writeTestAdapter(dir(), model.config as DecoderArchConfig, 1);
    const [p] = prompts(model, 1);
    const tokens = async (engine: Awaited<ReturnType<typeof createEngine>>, lora: LoraRequest | null) => (await finalOutput(engine, request(p, {}, { lora }))).outputs[0].tokenIds;

    const local = await createInProcessEngine(model, engineOptions({ lora: LORA }));
    const expected = { base: await tokens(local, null), adapted: await tokens(local, adapter) };
    await local.shutdown();
    expect(expected.adapted).not.toEqual(expected.base);

    const worker = await createEngine(engineOptions({ useWorker: true, lora: LORA }));
    try {
      const missing = join(dir(), 'missing');
      await expect(worker.loadLora({ name: 'gone', id: 7, path: missing })).rejects.toThrow(`No adapter found for ${missing}`);
      await worker.loadLora(adapter);
      expect(await tokens(worker, adapter)).toEqual(expected.adapted);
      expect(await tokens(worker, null)).toEqual(expected.base);
      await worker.sleep(1, 'wait');
      await worker.wakeUp();
      expect(await tokens(worker, adapter)).toEqual(expected.adapted);
      await worker.unloadLora(adapter.id);
      expect(worker.stats().runningLoraAdapters).toEqual([]);
      expect(worker.health().alive).toBe(true);
    } finally {
      await worker.shutdown();
    }
  });
});
