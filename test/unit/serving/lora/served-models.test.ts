// The served-models registry on its own: one load at a time per name (two concurrent loads of one
// name: one wins, the other is "already loaded"), an unload that the engine fails keeps the
// adapter, and the routes that run no adapter refuse an adapter's name.

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { OpenAIHttpError } from '../../../../src/serving/openai-error';
import { ServedModels, type LoraEngine } from '../../../../src/serving/lora/served-models';
import { resolveBaseModelName, resolveModel } from '../../../../src/serving/serving-options';

const path = mkdtempSync(`${tmpdir()}/ortllm-served-models-`);

function slowEngine(unloadFails = false): LoraEngine & { loads: number; unloads: number[] } {
  const engine = {
    loads: 0,
    unloads: [] as number[],
    async loadLora() {
      engine.loads++;
      await new Promise((resolve) => setTimeout(resolve, 20));
    },
    async unloadLora(id: number) {
      if (unloadFails) throw new Error('engine gone');
      engine.unloads.push(id);
    },
  };
  return engine;
}

const opts = { servedModelNames: ['base'], enableLora: true };

describe('ServedModels', () => {
  it('serializes loads of one name: of two at once, one loads and the other is refused as already loaded', async () => {
    const engine = slowEngine();
    const models = new ServedModels(opts, engine);
    const results = await Promise.allSettled([models.load({ lora_name: 'a', lora_path: path }), models.load({ lora_name: 'a', lora_path: path })]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected']);
    expect(((results[1] as PromiseRejectedResult).reason as OpenAIHttpError).status).toBe(400);
    expect(engine.loads).toBe(1);
    expect(models.list().map((a) => a.request)).toEqual([{ name: 'a', id: 1, path }]);
  });

  it('loads of different names run side by side with their own ids', async () => {
    const models = new ServedModels(opts, slowEngine());
    await Promise.all([models.load({ lora_name: 'a', lora_path: path }), models.load({ lora_name: 'b', lora_path: path })]);
    expect(models.list().map((a) => [a.request.name, a.request.id])).toEqual([['a', 1], ['b', 2]]);
  });

  it('an in-place reload serves a new id and lets the engine drop the old one', async () => {
    const engine = slowEngine();
    const models = new ServedModels(opts, engine);
    await models.load({ lora_name: 'a', lora_path: path });
    await models.load({ lora_name: 'a', lora_path: path, load_inplace: true });
    expect([engine.unloads, models.resolve('a').lora?.id]).toEqual([[1], 2]);
  });

  it('error messages cut a long name or path instead of echoing it whole', async () => {
    const models = new ServedModels(opts, slowEngine());
    const long = 'x'.repeat(10_000);
    await expect(models.unload({ lora_name: long })).rejects.toMatchObject({ status: 404, message: `The lora adapter '${'x'.repeat(256)}… (10000 characters)' cannot be found.` });
    await expect(models.load({ lora_name: 'a', lora_path: `/${long}` })).rejects.toMatchObject({ status: 404, message: expect.stringMatching(/^Loading lora a failed: No adapter found for \/x{255}… \(10001 characters\)$/) });
  });

  it('an unload the engine fails is a 500 and the adapter stays served', async () => {
    const models = new ServedModels(opts, slowEngine(true));
    await models.load({ lora_name: 'a', lora_path: path });
    await expect(models.unload({ lora_name: 'a' })).rejects.toMatchObject({ status: 500, message: "Failed to remove lora adapter 'a' from the engine." });
    expect(models.resolve('a').lora?.id).toBe(1);
  });

  it('pooling and speech routes refuse an adapter name with 400 and accept the base names', async () => {
    const models = new ServedModels(opts, slowEngine());
    await models.load({ lora_name: 'a', lora_path: path });
    const serving = { servedModelNames: ['base'], models };
    expect(() => resolveBaseModelName('a', serving, 'pooling API')).toThrow('The model `a` is a LoRA adapter; the pooling API runs the base model only here.');
    expect(resolveBaseModelName('base', serving, 'pooling API')).toBe('base');
    expect(resolveModel('a', serving)).toEqual({ name: 'a', lora: { name: 'a', id: 1, path } });
  });

  it('without a registry only the served names resolve (servings built from plain options)', () => {
    expect(resolveModel(null, { servedModelNames: ['base', 'alias'] })).toEqual({ name: 'base', lora: null });
    expect(resolveModel('alias', { servedModelNames: ['base', 'alias'] })).toEqual({ name: 'base', lora: null });
    expect(() => resolveModel('a', { servedModelNames: ['base'] })).toThrow('The model `a` does not exist.');
  });
});
