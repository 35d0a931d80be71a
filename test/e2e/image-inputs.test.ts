// Image parts on the real server with a text-only model (stories260K): chat's image_url and the
// Responses API's input_image get vLLM's "<model> is not a multimodal model" 400 before any
// fetch, malformed parts and refused media fields get theirs first, and the server goes on serving.

import sharp from 'sharp';
import { defaultTestModel, expectApiError, SERVER_START_TIMEOUT_MS, startServing, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';

const onModel = needs(defaultTestModel());

onModel.describe('image inputs with a text-only model', () => {
  let s: Serving;
  let pngDataUrl: string;

  beforeAll(async () => {
    s = await startServing(['--limit-mm-per-prompt', '{"image": 1}', '--media-io-kwargs', '{"image": {"rgba_background_color": [0, 0, 0]}}']);
    const png = await sharp({ create: { width: 8, height: 8, channels: 3, background: '#336699' } }).png().toBuffer();
    pngDataUrl = `data:image/png;base64,${png.toString('base64')}`;
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  it("answers a base64 image part with vLLM's 400, and keeps serving", async () => {
    const call = s.client.chat.completions.create({
      model: s.model,
      max_tokens: 4,
      messages: [{ role: 'user', content: [{ type: 'text', text: 'What is this?' }, { type: 'image_url', image_url: { url: pngDataUrl } }] }],
    });
    const err = await expectApiError(call, 400, null);
    expect(err.message).toBe(`400 ${s.model} is not a multimodal model`);
    const ok = await s.client.chat.completions.create({ model: s.model, max_tokens: 4, messages: [{ role: 'user', content: 'Once upon' }] });
    expect(ok.choices[0].message.content).toEqual(expect.any(String));
  });

  it('says once at start-up that the processing flags have no effect on this model', () => {
    const warnings = s.server.output().split('\n').filter((line) => line.includes('[media]'));
    expect(warnings).toEqual([`[media] --limit-mm-per-prompt, --media-io-kwargs: no effect, ${s.model} is not a multimodal model (image parts get a 400)`]);
  });

  it('refuses before fetching: a URL no domain allows still gets the model error', async () => {
    const r = await s.post('/v1/chat/completions', {
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: 'https://example.com/cat.png' }, { type: 'image_url', image_url: 'file:///etc/passwd' }] }],
    });
    expect([r.status, r.json.error.message]).toEqual([400, `${s.model} is not a multimodal model`]);
  });

  it('checks the part and the media fields before the model', async () => {
    const malformed = await s.post('/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { detail: 'low' } }] }] });
    expect([malformed.status, malformed.json.error.param]).toEqual([400, 'messages']);
    expect(malformed.json.error.message).toMatch(/needs 'image_url'/);
    const badKwargs = await s.post('/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], media_io_kwargs: { image: 3 } });
    expect([badKwargs.status, badKwargs.json.error.param]).toEqual([400, 'media_io_kwargs']);
    const audio = await s.post('/v1/chat/completions', { messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }] });
    expect(audio.status).toBe(400);
    expect(audio.json.error.message).toMatch(/not supported by this server yet/);
  });

  it("gives the Responses API's input_image the same answer", async () => {
    const call = s.client.responses.create({
      model: s.model,
      max_output_tokens: 4,
      input: [{ role: 'user', content: [{ type: 'input_text', text: 'Describe' }, { type: 'input_image', image_url: pngDataUrl, detail: 'auto' }] }],
    });
    const err = await expectApiError(call, 400, null);
    expect(err.message).toBe(`400 ${s.model} is not a multimodal model`);
  });
});
