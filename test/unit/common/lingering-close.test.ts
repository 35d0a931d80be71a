// Lingering close on a real Node HTTP server and raw client sockets: the early answer arrives
// whole while the client is still sending, and the socket is closed when the body is complete,
// the client stops sending for idleMs, sends past maxBytes, or keeps trickling past totalMs.

import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { lingerAfterAnswer, type LingerLimits } from '../../../src/common/lingering-close';

const LIMITS: LingerLimits = { totalMs: 2_000, idleMs: 500, maxBytes: 4 * 2 ** 20 };
const BODY_BYTES = 64 * 2 ** 20;
const ANSWER = '{"error":"Unauthorized"}';

let server: Server;
let port: number;
/** What to call when the server closes the connection from a client port. */
const onServerClose = new Map<number, () => void>();

beforeAll(async () => {
  server = createServer((request, response) => {
    lingerAfterAnswer(request, LIMITS);
    response.writeHead(401, { 'content-type': 'application/json', 'content-length': ANSWER.length, connection: 'close' }).end(ANSWER);
  });
  server.on('connection', (socket: Socket) => {
    const clientPort = socket.remotePort!;
    socket.once('close', () => onServerClose.get(clientPort)?.());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

interface Upload {
  socket: Socket;
  /** Everything the server sent. */
  answer: Promise<string>;
  /** Resolves when the server closed the socket: ms since the upload started, and whether the client saw a reset. */
  closed: Promise<{ afterMs: number; reset: boolean }>;
}

/** Opens a POST announcing `contentLength` body bytes; the caller sends (some of) them. */
function upload(contentLength: number): Upload {
  const started = performance.now();
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${contentLength}\r\n\r\n`);
  let reset = false;
  let text = '';
  socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
  socket.on('error', (err: NodeJS.ErrnoException) => (reset ||= err.code === 'ECONNRESET' || err.code === 'EPIPE'));
  // The client keeps its side open after the server's FIN (as an uploading client does).
  const closed = new Promise<{ afterMs: number; reset: boolean }>((resolve) => {
    socket.once('connect', () => onServerClose.set(socket.localPort!, () => {
      const afterMs = performance.now() - started;
      setTimeout(() => {
        resolve({ afterMs, reset });
        socket.destroy();
      }, 50);
    }));
  });
  const answer = new Promise<string>((resolve) => {
    socket.on('end', () => resolve(text));
    socket.on('close', () => resolve(text));
  });
  return { socket, answer, closed };
}

/** Writes `total` bytes in 64 KiB pieces, honouring back-pressure, until done or the socket is gone. */
async function send(socket: Socket, total: number): Promise<void> {
  const piece = Buffer.alloc(64 * 1024, 'a');
  for (let sent = 0; sent < total && !socket.destroyed; sent += piece.length) {
    if (!socket.write(piece.subarray(0, Math.min(piece.length, total - sent)))) {
      await new Promise<void>((resolve) => {
        const go = (): void => {
          socket.removeListener('drain', go);
          socket.removeListener('close', go);
          resolve();
        };
        socket.once('drain', go);
        socket.once('close', go);
      });
    }
  }
}

describe('lingering close', () => {
  it('lets a client finish its upload and read the answer, then closes without a reset', async () => {
    const bytes = 2 * 2 ** 20;
    const call = upload(bytes);
    await send(call.socket, bytes);
    expect(await call.answer).toMatch(new RegExp(`^HTTP/1.1 401 [^]*\r\n\r\n${ANSWER.replace(/[{}]/g, '\\$&')}$`));
    const closed = await call.closed;
    expect(closed.reset).toBe(false);
    expect(closed.afterMs).toBeLessThan(LIMITS.idleMs);
  });

  it('closes a client that stops sending after idleMs', async () => {
    const call = upload(BODY_BYTES);
    await send(call.socket, 100_000);
    expect(await call.answer).toContain('HTTP/1.1 401');
    const { afterMs } = await call.closed;
    expect(afterMs).toBeGreaterThanOrEqual(LIMITS.idleMs - 50);
    expect(afterMs).toBeLessThan(LIMITS.totalMs);
  });

  it('closes a client that keeps trickling bytes after totalMs', async () => {
    const call = upload(BODY_BYTES);
    const trickle = setInterval(() => !call.socket.destroyed && call.socket.write('a'), 100);
    const { afterMs } = await call.closed;
    clearInterval(trickle);
    expect(await call.answer).toContain('HTTP/1.1 401');
    expect(afterMs).toBeGreaterThanOrEqual(LIMITS.totalMs - 50);
    expect(afterMs).toBeLessThan(LIMITS.totalMs + 1_000);
  });

  it('closes a client that sends more than maxBytes', async () => {
    const call = upload(BODY_BYTES);
    const sending = send(call.socket, BODY_BYTES);
    const { afterMs } = await call.closed;
    await sending;
    expect(await call.answer).toContain('HTTP/1.1 401');
    expect(afterMs).toBeLessThan(LIMITS.idleMs);
  });
});
