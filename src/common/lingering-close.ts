// Lingering close (nginx's lingering_close): an answer given before the request body has fully
// arrived (401 from the API key check, 408/413 from the body parser) ends with Connection: close.
// Closing the socket at once, with the rest of the body unread, makes the kernel answer the
// client's next segments with a reset, which a client still uploading often meets before it reads
// the answer (ECONNRESET / EPIPE instead of the 401). Instead the write side is closed after the
// answer and what the client still sends is read and thrown away until the body is complete or
// the client closes, within bounds so that a slow or endless sender cannot hold the socket.

import type { FastifyReply } from 'fastify';
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

export interface LingerLimits {
  /** The longest a socket lingers in all (nginx lingering_time). */
  totalMs: number;
  /** The longest it waits for the client's next bytes (nginx lingering_timeout). */
  idleMs: number;
  /** The most bytes read and thrown away. */
  maxBytes: number;
}

export const LINGER_LIMITS: LingerLimits = { totalMs: 30_000, idleMs: 5_000, maxBytes: 256 * 2 ** 20 };

/** How often a lingering socket's bounds are checked. */
const CHECK_MS = 250;

type ClosableSocket = Socket & { destroySoon?: () => void };

const lingering = new WeakSet<Socket>();
/** The sockets lingering now, with what closes each. */
const closers = new Map<Socket, () => void>();

/** Closes the lingering sockets of `server` (at shutdown: they must not hold it up). */
export function endLingering(server: unknown): void {
  for (const [socket, close] of [...closers]) if ((socket as Socket & { server?: unknown }).server === server) close();
}

/**
 * Lets the connection of `request` linger after its answer when the body is still arriving. Call
 * before the answer is sent: Node closes a Connection: close socket through `destroySoon` once the
 * answer is written, which this replaces for that socket.
 */
export function lingerAfterAnswer(request: IncomingMessage, limits: LingerLimits = LINGER_LIMITS): void {
  const socket = request.socket as ClosableSocket | null;
  if (!socket || request.complete || lingering.has(socket) || typeof socket.destroySoon !== 'function') return;
  lingering.add(socket);
  const closeNow = socket.destroySoon.bind(socket);
  socket.destroySoon = () => {
    if (request.complete || socket.destroyed) return closeNow();
    linger(request, socket, limits);
  };
}

/** Marks the answer `Connection: close` and lets its connection linger: every such answer goes through here. */
export function closeAfterAnswer(reply: FastifyReply): void {
  void reply.header('connection', 'close');
  lingerAfterAnswer(reply.request.raw);
}

function linger(request: IncomingMessage, socket: Socket, limits: LingerLimits): void {
  const started = performance.now();
  const startBytes = socket.bytesRead;
  let lastBytes = startBytes;
  let lastDataAt = started;
  const close = (): void => {
    closers.delete(socket);
    clearInterval(check);
    request.removeListener('end', closeWhenFlushed);
    socket.removeListener('end', closeWhenFlushed);
    if (!socket.destroyed) socket.destroy();
  };
  // Nothing more to read: close once the answer has left (still within the bounds above).
  const closeWhenFlushed = (): void => {
    if (socket.writableFinished) close();
    else socket.once('finish', close);
  };
  const check = setInterval(() => {
    const now = performance.now();
    const bytes = socket.bytesRead;
    if (bytes !== lastBytes) [lastBytes, lastDataAt] = [bytes, now];
    if (now - started >= limits.totalMs || now - lastDataAt >= limits.idleMs || bytes - startBytes > limits.maxBytes) close();
  }, CHECK_MS);
  check.unref();
  closers.set(socket, close);
  // The answer is written: end our side (the client reads it, then EOF), keep reading theirs.
  socket.end();
  request.once('end', closeWhenFlushed);
  socket.once('end', closeWhenFlushed);
  socket.once('close', close);
  // Thrown away: a body parser that gave up paused the request and left no 'data' listener.
  request.removeAllListeners('data');
  request.resume();
}
