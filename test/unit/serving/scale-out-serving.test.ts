// The scale-out serving classes as plain TypeScript (no Nest): render → generate → derender of a
// completion gives what /v1/completions gives, whole and chunk by chunk. HTTP: scale-out-http.test.ts.

import { resolveServerConfig } from '../../../src/config/server-config';
import { createBuiltinTokenizer } from '../../../src/model/tokenizer';
import { CompletionServing } from '../../../src/serving/completion-serving';
import { DerenderServing } from '../../../src/serving/derender/derender-serving';
import { DerenderStreamServing } from '../../../src/serving/derender/derender-stream-serving';
import type { GenerateChunkInput } from '../../../src/serving/derender/derender-types';
import type { DerenderStreamState } from '../../../src/serving/derender/stream-state';
import { GenerateServing, generateServingOptions } from '../../../src/serving/generate/generate-serving';
import { RenderServing } from '../../../src/serving/render/render-serving';
import { servingOptionsFrom } from '../../../src/serving/serving-options';
import { FakeEngine } from '../../helpers/fake-engine';

const config = resolveServerConfig({ servedModelNames: ['m'], maxNumSeqs: 4, enableScaleOut: true }, {});
const engine = new FakeEngine({ tokenizer: createBuiltinTokenizer(), script: [...Buffer.from('Once upon a time.')] });
const opts = servingOptionsFrom(config);
/** What a client sends back: the generate answer as JSON. */
const overTheWire = <T extends GenerateChunkInput>(body: object): T => JSON.parse(JSON.stringify(body)) as T;
const completionRequest = { prompt: 'Hi', max_tokens: 16, temperature: 0, stop: ['time'] };

async function renderAndGenerate(stream: boolean) {
  const [rendered] = await new RenderServing(engine, opts).renderCompletion({ ...completionRequest, stream }, 'r1');
  const generate = new GenerateServing(engine, generateServingOptions(config));
  return { rendered, generate, prepared: generate.prepare({ ...rendered, return_token_ids: true }, 'g1') };
}

describe('render → generate → derender on the serving classes', () => {
  it('derenders a whole response to the text /v1/completions answers', async () => {
    const completions = new CompletionServing(engine, opts);
    const direct = await completions.complete(await completions.prepare({ ...completionRequest }, 'c1'));
    const { rendered, generate, prepared } = await renderAndGenerate(false);
    expect(rendered.output_mode).toBe('tokens');
    const generated = await generate.complete(prepared);
    const derendered = new DerenderServing(engine, opts).completion({
      generate_responses: [overTheWire(generated)],
      prompt_tokens: [rendered.token_ids.length],
      completion_request: completionRequest,
    });
    expect(derendered.choices.map((c) => [c.text, c.finish_reason])).toEqual(direct.choices.map((c) => [c.text, c.finish_reason]));
    expect(derendered.choices[0]).toMatchObject({ text: 'Once upon a ', finish_reason: 'stop' });
    expect(derendered.usage).toMatchObject({ prompt_tokens: rendered.token_ids.length, completion_tokens: generated.choices[0].token_ids.length });
  });

  it('derenders a stream chunk by chunk, carrying the state, to the same text', async () => {
    const { rendered, generate, prepared } = await renderAndGenerate(true);
    const streams = new DerenderStreamServing(engine, opts);
    let state: DerenderStreamState | null = null;
    let text = '';
    for await (const chunk of generate.stream(prepared)) {
      const out = streams.completionStream({ generate_chunk: overTheWire(chunk), stream_state: state, prompt_token_ids: rendered.token_ids, completion_request: completionRequest });
      state = out.stream_state;
      text += out.chunk.choices.map((c) => c.text).join('');
    }
    expect(text).toBe('Once upon a ');
    expect(state?.output_chunk_lens.reduce((a, b) => a + b, 0)).toBe(state?.output_token_ids.length);
  });

  it('refuses a text-mode response with a 400 naming the field', () => {
    const derender = () => new DerenderServing(engine, opts).chat({ generate_response: { request_id: 'x', output_mode: 'text', choices: [{ index: 0, token_ids: [1] }] } });
    expect(derender).toThrow(expect.objectContaining({ status: 400, param: 'generate_response.output_mode' }));
  });
});
