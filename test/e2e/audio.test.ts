// /v1/audio/transcriptions and /v1/audio/translations on the real server with the official
// `openai` client: a small random Whisper (HF layout) on espeak-ng speech encoded by ffmpeg;
// every response_format, streaming, translations, language detection, a 70 s recording (three
// windows), 8 concurrent transcriptions (each equal to its solo run) while tokenize requests run,
// and the bad inputs. Plus `--model builtin:whisper-tiny`.

import { execFileSync } from 'node:child_process';
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import { SERVER_START_TIMEOUT_MS, startServer, type TestServer } from '../helpers/server';
import { ffmpegEncode, SPEECH_TOOLS, speak, tempDir } from '../helpers/speech';
import { needs } from '../helpers/needs';
import { writeWhisperDir } from '../helpers/write-whisper-dir';
import { whisperTinyTokenizer } from '../../src/model/dummy/builtin-whisper';

const withSpeechTools = needs(...SPEECH_TOOLS);

/** A few tokens per window keep the random model's decoding short. */
const TOKENS = { max_completion_tokens: 6 } as Record<string, unknown>;

withSpeechTools.describe('speech-to-text routes (random Whisper, real server, openai client)', () => {
  const dir = tempDir('ortllm-audio-e2e-');
  let server: TestServer;
  let client: OpenAI;
  let model: string;
  const files: Record<string, string> = {};

  beforeAll(async () => {
    const modelDir = join(dir.path, 'whisper');
    writeWhisperDir(modelDir);
    const sentences = ['Hello world.', 'The weather is nice today.', 'Speech recognition on one engine.', 'Seven silver swans.', 'Numbers: one, two, three.', 'A quiet morning.', 'Open the window please.', 'Good night.'];
    sentences.forEach((s, i) => (files[`s${i}`] = ffmpegEncode(speak(s, join(dir.path, `s${i}.wav`)), dir.path, `s${i}`, i % 2 ? 'mp3' : 'ogg')));
    files.wav = join(dir.path, 's0.wav');
    // 70 s: speech, silence, speech … (sox pads and concatenates).
    execFileSync('sox', [files.wav, join(dir.path, 'long.wav'), 'pad', '0', '2.5', 'repeat', '19', 'trim', '0', '70']);
    files.long = ffmpegEncode(join(dir.path, 'long.wav'), dir.path, 'long', 'flac');
    server = await startServer(['--max-audio-clip-filesize-mb', '1', '--max-num-seqs', '16'], { model: modelDir });
    client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'none' });
    model = modelDir;
  }, SERVER_START_TIMEOUT_MS);

  afterAll(async () => {
    await server?.stop();
    dir.remove();
  });

  const transcribe = (file: string, extra: Record<string, unknown> = {}) =>
    client.audio.transcriptions.create({ file: createReadStream(file), model, ...TOKENS, ...extra } as never) as Promise<any>;

  it('answers json with the text and the audio seconds as usage', async () => {
    const result = await transcribe(files.s1, { language: 'en' });
    expect(typeof result.text).toBe('string');
    expect(result.text.length).toBeGreaterThan(0);
    const seconds = Number(execFileSync('soxi', ['-D', files.wav.replace('s0', 's1')]).toString());
    expect(result.usage).toEqual({ type: 'duration', seconds: Math.ceil(seconds) });
  });

  it('answers every response_format with the same transcript', async () => {
    const json = await transcribe(files.s2, { language: 'en', response_format: 'json' });
    const text = await transcribe(files.s2, { language: 'en', response_format: 'text' });
    expect(text).toBe(json.text);
    const verbose = await transcribe(files.s2, { language: 'en', response_format: 'verbose_json', timestamp_granularities: ['segment'] });
    expect(verbose.language).toBe('en');
    expect(typeof verbose.duration).toBe('number'); // as OpenAI's types have it (vLLM sends a string)
    expect(verbose.duration).toBeGreaterThan(1);
    expect(verbose.segments.length).toBeGreaterThan(0);
    expect(verbose.segments[0]).toMatchObject({ id: 0, seek: 0, start: 0 });
    const srt = await transcribe(files.s2, { language: 'en', response_format: 'srt' });
    expect(srt).toMatch(/^1\n00:00:00,000 --> \d\d:\d\d:\d\d,\d\d\d\n/);
    const vtt = await transcribe(files.s2, { language: 'en', response_format: 'vtt' });
    expect(vtt).toMatch(/^WEBVTT\n\n00:00:00\.000 --> \d\d:\d\d:\d\d\.\d\d\d\n/);
  });

  it('streams transcription.chunk deltas that add up to the non-streamed text, then the usage', async () => {
    const whole = await transcribe(files.s3, { language: 'en' });
    const stream = (await transcribe(files.s3, { language: 'en', stream: true, stream_include_usage: true })) as AsyncIterable<any>;
    const chunks: any[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((c) => c.object === 'transcription.chunk' && c.id === chunks[0].id)).toBe(true);
    expect(chunks.slice(0, -1).map((c) => c.choices[0].delta.content).join('')).toBe(whole.text);
    expect(chunks[chunks.length - 2].choices[0].finish_reason).toBe('length');
    const usage = chunks[chunks.length - 1].usage;
    expect(chunks[chunks.length - 1].choices).toEqual([]);
    expect(usage.completion_tokens).toBe(6);
    expect(usage.prompt_tokens).toBeGreaterThan(100); // the prompt plus one token per 10 ms of audio
  });

  it("streams OpenAI's transcript.text.delta / .done events in the same objects, read through the client's types", async () => {
    const params = { model, language: 'en', ...TOKENS };
    const whole = await client.audio.transcriptions.create({ ...params, file: createReadStream(files.s5) } as OpenAI.Audio.TranscriptionCreateParamsNonStreaming);
    expect(whole.text.length).toBeGreaterThan(0);
    const typed = async (extra: Record<string, unknown>) => {
      const stream = await client.audio.transcriptions.create({ ...params, ...extra, file: createReadStream(files.s5), stream: true } as OpenAI.Audio.TranscriptionCreateParamsStreaming);
      let deltas = '';
      let vllmContent = '';
      const done: OpenAI.Audio.TranscriptionTextDoneEvent[] = [];
      for await (const event of stream) {
        if (event.type === 'transcript.text.delta') deltas += event.delta;
        else if (event.type === 'transcript.text.done') done.push(event);
        vllmContent += (event as unknown as { choices: { delta: { content: string } }[] }).choices.map((c) => c.delta.content).join('');
      }
      return { deltas, vllmContent, done };
    };
    const plain = await typed({});
    expect(plain).toEqual({ deltas: whole.text, vllmContent: whole.text, done: [expect.objectContaining({ text: whole.text, choices: [{ delta: { content: '' } }] })] });
    expect(plain.done[0].usage).toBeUndefined();
    const withUsage = await typed({ stream_include_usage: true });
    expect(withUsage.done).toHaveLength(1);
    expect(withUsage.done[0].usage).toMatchObject({ type: 'tokens', output_tokens: 6, completion_tokens: 6, total_tokens: expect.any(Number) });
    expect(withUsage.done[0].usage!.input_tokens).toBe((withUsage.done[0].usage as any).prompt_tokens);
  });

  it('translates (json without usage, translation.chunk streams) and detects the language when none is given', async () => {
    const translate = (extra: Record<string, unknown>): Promise<any> => client.audio.translations.create({ file: createReadStream(files.s4), model, ...TOKENS, ...extra });
    const translation = await translate({});
    expect(typeof translation.text).toBe('string');
    expect(translation.usage).toBeUndefined();
    // The openai client has no streaming translations (OpenAI's API has none): read vLLM's SSE directly.
    const form = new FormData();
    form.append('file', new File([readFileSync(files.s4)], 'speech'));
    for (const [k, v] of Object.entries({ ...TOKENS, stream: 'true' })) form.append(k, String(v));
    const sse = await (await fetch(`${server.baseUrl}/v1/audio/translations`, { method: 'POST', body: form })).text();
    const frames = sse.split('\n\n').filter((f) => f.startsWith('data: ')).map((f) => f.slice(6));
    expect(frames[frames.length - 1]).toBe('[DONE]');
    const chunks = frames.slice(0, -1).map((f) => JSON.parse(f));
    expect(chunks.every((c) => c.object === 'translation.chunk' && /^translate-/.test(c.id))).toBe(true);
    expect(chunks.map((c) => c.choices[0].delta.content).join('')).toBe(translation.text);
    const detected = await transcribe(files.s4, { response_format: 'verbose_json' });
    expect(detected.language).toMatch(/^[a-z]{2,3}$/);
    const given = await transcribe(files.s4, { response_format: 'verbose_json', language: detected.language });
    expect(given.text).toBe(detected.text);
  });

  it('splits a 70 s recording into windows, joined in order, timestamps offset per window', async () => {
    const verbose = await transcribe(files.long, { language: 'en', response_format: 'verbose_json' });
    expect(verbose.duration).toBeCloseTo(70, 1);
    // Segments are in time order; those of later windows start past their window's offset.
    const starts = verbose.segments.map((s: any) => s.start);
    expect(starts).toEqual([...starts].sort((a, b) => a - b));
    for (const segment of verbose.segments) expect(segment.start).toBeGreaterThanOrEqual(segment.seek / 100);
    const json = await transcribe(files.long, { language: 'en' });
    expect(json.usage.seconds).toBe(70);
    // Three windows ([0, ~30), [~30, ~60), [~60, 70)): three finished engine requests, streamed in order.
    const chunks: any[] = [];
    for await (const chunk of (await transcribe(files.long, { language: 'en', stream: true })) as AsyncIterable<any>) chunks.push(chunk);
    expect(chunks.filter((c) => c.choices[0].finish_reason).length).toBe(3);
    expect(chunks.map((c) => c.choices[0].delta.content).join('')).toBe(json.text);
  });

  it('serves 8 concurrent transcriptions, each as alone, while tokenize requests run', async () => {
    const names = Object.keys(files).filter((n) => /^s\d$/.test(n));
    const alone: string[] = [];
    for (const n of names) alone.push((await transcribe(files[n], { language: 'en' })).text);
    const tokenizer = whisperTinyTokenizer();
    const texts = Array.from({ length: 16 }, (_, i) => `tokenize me ${i} ${'ünïcödé'.repeat(i % 3)}`);
    const tokenizing = Promise.all(
      texts.map(async (text) => {
        const res = await fetch(`${server.baseUrl}/tokenize`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ prompt: text, add_special_tokens: false }) });
        return ((await res.json()) as { tokens: number[] }).tokens;
      }),
    );
    const together = await Promise.all(names.map(async (n) => (await transcribe(files[n], { language: 'en' })).text));
    expect(together).toEqual(alone);
    expect(await tokenizing).toEqual(texts.map((t) => tokenizer.encode(t, { addSpecialTokens: false })));
  });

  it('answers bad input with a 400 envelope and keeps serving', async () => {
    const post = async (form: FormData, path = '/v1/audio/transcriptions') => {
      const res = await fetch(`${server.baseUrl}${path}`, { method: 'POST', body: form });
      return { status: res.status, body: (await res.json()) as any };
    };
    const form = (fields: Record<string, string | Blob>) => {
      const f = new FormData();
      for (const [k, v] of Object.entries(fields)) f.append(k, v);
      return f;
    };
    const blob = (bytes: Uint8Array | Buffer, name = 'audio.bin') => new File([bytes], name);
    const wav = readFileSync(files.wav);
    const corrupted = Buffer.from(readFileSync(files.s1));
    for (let i = 300; i < corrupted.length; i += 31) corrupted[i] ^= 0x5a;
    const big = join(dir.path, 'big.wav');
    writeFileSync(big, Buffer.concat([wav, Buffer.alloc(1_200_000)]));

    const cases: Array<[string, FormData, string | null, RegExp]> = [
      ['missing file', form({ model, language: 'en' }), 'file', /file/],
      ['empty file', form({ file: blob(new Uint8Array(0)) }), 'file', /empty/],
      ['not audio', form({ file: blob(Buffer.from('{"this is": "json, not audio"}')) }), 'file', /not recognised/],
      ['truncated header', form({ file: blob(wav.subarray(0, 30)) }), 'file', /Invalid or unsupported/],
      ['over the size limit', form({ file: blob(readFileSync(big)) }), 'audio_filesize_mb', /Maximum file size exceeded/],
      ['word timestamps', form({ file: blob(wav), response_format: 'verbose_json', 'timestamp_granularities[]': 'word' }), 'timestamp_granularities[]', /Word timestamps/],
      ['streaming verbose_json', form({ file: blob(wav), response_format: 'verbose_json', stream: 'true' }), 'response_format', /streaming/],
      ['unknown language', form({ file: blob(wav), language: 'xx' }), 'language', /Unsupported language: xx/],
      ['temperature not a number', form({ file: blob(wav), temperature: 'hot' }), 'temperature', /temperature/],
      ['unknown response_format', form({ file: blob(wav), response_format: 'mp3' }), 'response_format', /response_format/],
      ['two files', (() => { const f = form({ file: blob(wav) }); f.append('file', blob(wav)); return f; })(), 'file', /one audio file/],
    ];
    for (const [name, body, param, message] of cases) {
      const { status, body: reply } = await post(body);
      expect([name, status, reply.error.code, reply.error.param]).toEqual([name, 400, 400, param]);
      expect(reply.error.message).toMatch(message);
    }
    const json = await fetch(`${server.baseUrl}/v1/audio/transcriptions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"file": "x"}' });
    expect(json.status).toBe(400);
    const damaged = await post(form({ file: blob(corrupted), language: 'en', max_completion_tokens: '4' }));
    expect([200, 400]).toContain(damaged.status);
    expect((await post(form({ file: blob(wav), to_language: 'de' }), '/v1/audio/translations')).body.error.param).toBe('to_language');
    // Still healthy and serving.
    expect((await fetch(`${server.baseUrl}/health`)).status).toBe(200);
    expect((await transcribe(files.s0, { language: 'en' })).text.length).toBeGreaterThan(0);
  });

  it("has no text generation routes for a speech model: a 404 with vLLM's words for the API it lacks", async () => {
    const res = await fetch(`${server.baseUrl}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"prompt": "x"}' });
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.message).toBe('The model does not support Completions API');
    const chat = await client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Hi' }] }).catch((e: unknown) => e);
    expect(chat).toBeInstanceOf(OpenAI.NotFoundError);
    expect((chat as InstanceType<typeof OpenAI.NotFoundError>).message).toBe('404 The model does not support Chat Completions API');
  });
});

withSpeechTools.describe('--model builtin:whisper-tiny', () => {
  let server: TestServer;
  const dir = tempDir('ortllm-audio-builtin-');
  beforeAll(async () => {
    server = await startServer(['--model', 'builtin:whisper-tiny'], { model: null });
  }, SERVER_START_TIMEOUT_MS);
  afterAll(async () => {
    await server?.stop();
    dir.remove();
  });

  it('transcribes with no files, and lists itself', async () => {
    const client = new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey: 'none' });
    const wav = speak('Testing the built-in model.', join(dir.path, 'b.wav'));
    const result = (await client.audio.transcriptions.create({ file: createReadStream(wav), model: 'builtin:whisper-tiny', language: 'en', max_completion_tokens: 3 } as never)) as any;
    expect(typeof result.text).toBe('string');
    expect(result.usage.type).toBe('duration');
    expect((await client.models.list()).data.map((m) => m.id)).toEqual(['builtin:whisper-tiny']);
  });
});
