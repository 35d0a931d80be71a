// /tokenize and /detokenize, plus the server flags the serving layer reads
// (--served-model-name, --response-role, --trust-request-chat-template,
// --return-tokens-as-token-ids, --enable-force-include-usage), on one real server.

import { defaultTestModel, SERVER_START_TIMEOUT_MS, sseFrames, startServing, type Serving } from './completions-helpers';
import { needs } from '../helpers/needs';

const onModel = needs(defaultTestModel());
const USER = [{ role: 'user', content: 'Hi there' }];

onModel.describe('tokenize, detokenize and serving flags', () => {
  let s: Serving;

  beforeAll(async () => {
    s = await startServing([
      '--served-model-name', 'tiny', 'tiny-alias',
      '--response-role', 'narrator',
      '--trust-request-chat-template',
      '--return-tokens-as-token-ids',
      '--enable-force-include-usage',
    ]);
  }, SERVER_START_TIMEOUT_MS);
  afterAll(() => s?.server.stop());

  describe('POST /tokenize', () => {
    it('tokenizes a prompt (BOS added by default) with vLLM\'s shape', async () => {
      const r = await s.post('/tokenize', { prompt: 'Once upon' });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ count: 3, max_model_len: 2048, tokens: [1, 403, 407], token_strs: null });
      const noBos = await s.post('/tokenize', { prompt: 'Once upon', add_special_tokens: false, return_token_strs: true });
      expect(noBos.json).toMatchObject({ count: 2, tokens: [403, 407], token_strs: ['▁Once', '▁upon'] });
    });

    it('tokenizes a conversation exactly as chat completions does', async () => {
      const tok = await s.post('/tokenize', { model: 'tiny', messages: USER });
      const chat = await s.post('/v1/chat/completions', { messages: USER, max_tokens: 1, return_token_ids: true });
      expect(tok.json.tokens).toEqual(chat.json.prompt_token_ids);
      const noGen = await s.post('/tokenize', { messages: USER, add_generation_prompt: false });
      expect(noGen.json.count).toBeLessThan(tok.json.count);
      const both = await s.post('/tokenize', { messages: USER, continue_final_message: true });
      expect(both.status).toBe(400);
      expect(both.json.error.param).toBe('continue_final_message');
    });

    it('takes a per-request chat_template when trusted', async () => {
      const r = await s.post('/tokenize', { messages: USER, chat_template: '{{ messages[0].content }}', add_special_tokens: false });
      const plain = await s.post('/tokenize', { prompt: 'Hi there', add_special_tokens: false });
      expect(r.json.tokens).toEqual(plain.json.tokens);
    });

    it('renders tools with the chat template', async () => {
      const chat_template = '{{ messages[0].content }}{% if tools %} {{ tools[0].function.name }}{% endif %}';
      const withTools = await s.post('/tokenize', { messages: USER, chat_template, tools: [{ type: 'function', function: { name: 'get_weather' } }] });
      const plain = await s.post('/tokenize', { messages: USER, chat_template });
      const expected = await s.post('/tokenize', { prompt: `${USER[0].content} get_weather`, add_special_tokens: false });
      expect(withTools.json.tokens).toEqual(expected.json.tokens);
      expect(plain.json.count).toBeLessThan(withTools.json.count);
    });

    it('refuses unknown models, missing input and malformed tools', async () => {
      expect((await s.post('/tokenize', { model: 'x', prompt: 'a' })).json.error).toMatchObject({ type: 'NotFoundError', code: 404, param: 'model' });
      expect((await s.post('/tokenize', {})).json.error).toMatchObject({ code: 400, param: 'prompt' });
      expect((await s.post('/tokenize', { messages: USER, tools: [{ type: 'function' }] })).json.error).toMatchObject({ code: 400, param: 'tools.0.function' });
    });
  });

  describe('POST /detokenize', () => {
    it('round-trips', async () => {
      const r = await s.post('/detokenize', { tokens: [1, 403, 407] });
      expect(r.status).toBe(200);
      expect(r.json).toEqual({ prompt: 'Once upon' });
    });

    it('refuses ids outside the vocabulary and non-integer lists', async () => {
      expect((await s.post('/detokenize', { tokens: [99999] })).json.error).toMatchObject({ code: 400, param: 'tokens', type: 'BadRequestError' });
      expect((await s.post('/detokenize', { tokens: 'abc' })).json.error).toMatchObject({ code: 400, param: 'tokens' });
    });
  });

  describe('flags', () => {
    it('--served-model-name: any listed name is accepted, the first is reported', async () => {
      const r = await s.client.completions.create({ model: 'tiny-alias', prompt: 'Once', max_tokens: 1 });
      expect(r.model).toBe('tiny');
    });

    it('--response-role sets the message role, the first delta and what echo matches', async () => {
      const r = await s.client.chat.completions.create({ model: 'tiny', messages: USER as any, max_tokens: 2 });
      expect(r.choices[0].message.role).toBe('narrator');
      const frames = sseFrames((await s.post('/v1/chat/completions', { messages: USER, max_tokens: 2, stream: true })).text);
      expect(frames[0].choices[0].delta.role).toBe('narrator');
      const echoed = await s.post('/v1/chat/completions', {
        messages: [...USER, { role: 'narrator', content: 'Once' }], echo: true, max_tokens: 2, add_generation_prompt: false, continue_final_message: true,
      });
      expect(echoed.json.choices[0].message.content.startsWith('Once')).toBe(true);
    });

    it('--trust-request-chat-template lets chat_template render the prompt', async () => {
      const r = await s.post('/v1/chat/completions', {
        messages: USER, chat_template: 'Q: {{ messages[0].content }} A:', max_tokens: 1, return_prompt_text: true,
      });
      expect(r.json.prompt_text).toBe('Q: Hi there A:');
    });

    it('--return-tokens-as-token-ids applies without the request field', async () => {
      const r = await s.post('/v1/completions', { prompt: 'Once', max_tokens: 2, logprobs: 0, return_token_ids: true });
      expect(r.json.choices[0].logprobs.tokens).toEqual(r.json.choices[0].token_ids.map((id: number) => `token_id:${id}`));
    });

    it('--enable-force-include-usage sends a usage chunk without stream_options', async () => {
      const frames = sseFrames((await s.post('/v1/completions', { prompt: 'Once', max_tokens: 2, stream: true })).text);
      expect(frames[frames.length - 1]).toMatchObject({ choices: [], usage: { completion_tokens: 2 } });
      const chat = sseFrames((await s.post('/v1/chat/completions', { messages: USER, max_tokens: 2, stream: true })).text);
      expect(chat[chat.length - 1].usage.completion_tokens).toBe(2);
    });
  });
});
