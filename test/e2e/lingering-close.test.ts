// Early answers to a client still uploading a large body (401 from the API key check, 413 over
// --max-request-body-size) reach the official openai client and plain fetch as statuses with their
// bodies, not as connection resets; /health stays responsive meanwhile, a client that stops sending
// is let go after the idle bound, and the next normal request succeeds.

import OpenAI from 'openai';
import { connect, type Socket } from 'node:net';
import { HealthProbe } from '../helpers/health-probe';
import { whileResponsive } from '../helpers/responsive';
import { SERVER_START_TIMEOUT_MS, startServer, TestServer } from '../helpers/server';

const API_KEY = 'linger-key';
const BODY_LIMIT_BYTES = 2 ** 20;
const UPLOAD_BYTES = 25 * 2 ** 20;
const ROUNDS = 4;
const UNAUTHORIZED = '{"error":"Unauthorized"}';
/** The server's idle bound on a lingering socket (LINGER_LIMITS.idleMs) plus its check period. */
const IDLE_BOUND_MS = 5_000 + 250;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw upload with a wrong key that announces UPLOAD_BYTES and sends 64 KiB of them. */
function stalledUpload(port: number): { socket: Socket; answer: () => string; gone: () => string | undefined } {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  let answer = '';
  let gone: string | undefined;
  socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
  socket.on('error', (err: NodeJS.ErrnoException) => (gone = err.code));
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer wrong\r\nContent-Type: application/json\r\nContent-Length: ${UPLOAD_BYTES}\r\n\r\n`,
  );
  socket.write(Buffer.alloc(64 * 1024, 'a'));
  return { socket, answer: () => answer, gone: () => gone };
}

describe('early answers to a client still uploading (lingering close)', () => {
  let server: TestServer;
  let probe: HealthProbe;
  let model: string;
  const upload = Buffer.alloc(UPLOAD_BYTES, 'a');
  const client = (apiKey: string) => new OpenAI({ baseURL: `${server.baseUrl}/v1`, apiKey, maxRetries: 0 });
  const chat = (apiKey: string, content: string) => client(apiKey).chat.completions.create({ model, messages: [{ role: 'user', content }], max_tokens: 2 });
  const refusal = (promise: Promise<unknown>) => promise.then(() => null, (err: unknown) => err as { status?: number; error?: unknown; constructor: { name: string } });

  beforeAll(async () => {
    server = await startServer(['--api-key', API_KEY, '--max-request-body-size', String(BODY_LIMIT_BYTES)], { model: null });
    probe = new HealthProbe(server.baseUrl);
    model = (await client(API_KEY).models.list()).data[0].id;
  }, SERVER_START_TIMEOUT_MS);

  afterAll(async () => {
    probe?.close();
    await server?.stop();
  });

  async function expectNextRequestWorks(): Promise<void> {
    const next = await chat(API_KEY, 'Hello');
    expect(next.choices[0].message.role).toBe('assistant');
  }

  it('plain fetch reads the 401 and the 413 envelope while its 25 MB upload is refused', async () => {
    const post = (key: string, body: Buffer | ReadableStream<Uint8Array>) =>
      fetch(`${server.baseUrl}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body,
        duplex: 'half',
      }).then(async (res) => [res.status, await res.text()] as const, (err: Error & { cause?: { code?: string } }) => [err.message, err.cause?.code] as const);
    const chunked = () =>
      new ReadableStream<Uint8Array>({
        pull(controller) {
          for (let at = 0; at < UPLOAD_BYTES; at += 2 ** 20) controller.enqueue(upload.subarray(at, at + 2 ** 20));
          controller.close();
        },
      });
    const answers = await whileResponsive(probe, async () => {
      const seen: (readonly [unknown, unknown])[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        seen.push(await post('wrong', upload), await post('wrong', chunked()), await post(API_KEY, upload), await post(API_KEY, chunked()));
      }
      return seen;
    });
    const tooLarge = [413, expect.stringMatching(/^\{"error":\{"message":"The request body is larger than 1048576 bytes/)];
    expect(answers).toEqual(Array.from({ length: ROUNDS }, () => [[401, UNAUTHORIZED], [401, UNAUTHORIZED], tooLarge, tooLarge]).flat());
    const envelope = JSON.parse(answers[2][1] as string) as { error: Record<string, unknown> };
    expect(Object.keys(envelope.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    await expectNextRequestWorks();
  }, 120_000);

  it('the openai client gets AuthenticationError 401 and a 413 APIError, not a connection error', async () => {
    // Smaller than the fetch uploads: the client serializes the body on the test's own event
    // loop, which the /health probe shares; 8 MB still far outruns the socket buffers.
    const content = 'a'.repeat(8 * 2 ** 20);
    const errors = await whileResponsive(probe, async () => {
      const seen: unknown[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        for (const key of ['wrong', API_KEY]) {
          const err = await refusal(chat(key, content));
          seen.push([err?.constructor.name, err?.status]);
        }
      }
      return seen;
    });
    expect(errors).toEqual(Array.from({ length: ROUNDS }, () => [['AuthenticationError', 401], ['APIError', 413]]).flat());
    await expectNextRequestWorks();
  }, 120_000);

  it('lets go of a client that stops sending its body after the idle bound', async () => {
    const { socket, answer, gone } = stalledUpload(server.port);
    await whileResponsive(probe, () => sleep(1_000));
    expect(answer()).toMatch(/^HTTP\/1.1 401 /);
    // Still lingering: more body is read and thrown away.
    socket.write(upload.subarray(0, 1024));
    await sleep(200);
    expect(gone()).toBeUndefined();
    // Silent past the idle bound: the server has closed, so the next bytes meet a reset.
    await sleep(IDLE_BOUND_MS + 500);
    for (let attempt = 0; attempt < 5 && gone() === undefined; attempt++) {
      socket.write(upload.subarray(0, 1024));
      await sleep(100);
    }
    socket.destroy();
    expect(['ECONNRESET', 'EPIPE']).toContain(gone());
    await expectNextRequestWorks();
  }, 60_000);

  it('does not let a lingering upload hold up shutdown', async () => {
    const other = await startServer(['--api-key', API_KEY], { model: null });
    const { socket, answer } = stalledUpload(other.port);
    const trickle = setInterval(() => socket.write('a'), 200);
    await sleep(500);
    expect(answer()).toMatch(/^HTTP\/1.1 401 /);
    const started = performance.now();
    const code = await other.stop();
    const tookMs = performance.now() - started;
    clearInterval(trickle);
    socket.destroy();
    expect({ code, quick: tookMs < 3_000 }).toEqual({ code: 0, quick: true });
  }, SERVER_START_TIMEOUT_MS);
});
