// TcpConnector's socket thread: the producer's listening server and the consumer's pulls
// (wire.ts). A pull of an offer in shared memory is checked and served here, its blocks copied
// straight out of the KV arrays (pinned: nothing writes them); any other pull is handed to the
// engine thread, which checks it and answers with the blocks' bytes. Pulled bytes are checked
// here and handed back whole.

import * as net from 'node:net';
import { parentPort, workerData } from 'node:worker_threads';
import type { SharedKvLayout } from '../../model/runner/kv-cache';
import type { OfferedTransfer } from './kv-connector';
import { checkPull } from './pull-check';
import type { FromTcpThread, TcpThreadData, ToTcpThread } from './tcp-thread-protocol';
import { decodeJson, encodeFrame, encodeJson, FRAME_BYTES, FrameSocket, sha256, shapeMismatch, type PullReply, type PullRequest } from './wire';

const data = workerData as TcpThreadData;
const port = parentPort!;
const post = (message: FromTcpThread, transfer: ArrayBuffer[] = []) => port.postMessage(message, transfer);
const sockets = new Set<net.Socket>();
const reads = new Map<number, (answer: { buffer: ArrayBuffer; count: number } | { error: string }) => void>();
let nextRead = 0;
let server: net.Server | null = null;

interface SharedOffer {
  transfer: OfferedTransfer;
  layout: SharedKvLayout;
  timer: NodeJS.Timeout;
}
const sharedOffers = new Map<string, SharedOffer>();

function dropOffer(requestId: string): void {
  const offer = sharedOffers.get(requestId);
  if (offer) clearTimeout(offer.timer);
  sharedOffers.delete(requestId);
}

port.on('message', (message: ToTcpThread) => {
  switch (message.type) {
    case 'pull':
      pull(message).then(
        ({ buffer, count }) => post({ type: 'pulled', id: message.id, buffer, count }, [buffer]),
        (err: unknown) => post({ type: 'pull-failed', id: message.id, error: err instanceof Error ? err.message : String(err) }),
      );
      break;
    case 'blocks':
    case 'refuse': {
      const answer = reads.get(message.id);
      reads.delete(message.id);
      answer?.(message.type === 'blocks' ? { buffer: message.buffer, count: message.count } : { error: message.error });
      break;
    }
    case 'offer': {
      const { transfer, layout, expireMs } = message;
      const timer = setTimeout(() => {
        sharedOffers.delete(transfer.requestId);
        post({ type: 'released', requestId: transfer.requestId, reason: 'expired' });
      }, expireMs);
      sharedOffers.set(transfer.requestId, { transfer, layout, timer });
      break;
    }
    case 'withdraw':
      for (const requestId of message.requestIds) dropOffer(requestId);
      break;
    case 'close':
      for (const timer of [...sharedOffers.values()].map((offer) => offer.timer)) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      server?.close();
      port.close();
      break;
  }
});

if (data.listen) {
  const { host, port: wanted } = data.listen;
  const listening = net.createServer((socket) => void serve(socket));
  listening.once('error', (err) => post({ type: 'listen-failed', error: `cannot listen on ${host}:${wanted}: ${err.message}` }));
  listening.listen(wanted, host, () => {
    server = listening;
    listening.on('error', () => undefined);
    post({ type: 'listening', port: (listening.address() as net.AddressInfo).port });
  });
}

/** Pulls, checks shape, lengths and checksums, and returns the blocks as one buffer. */
async function pull(job: Extract<ToTcpThread, { type: 'pull' }>): Promise<{ buffer: ArrayBuffer; count: number }> {
  const { source } = job;
  const socket = net.connect({ host: source.host, port: source.port });
  const deadline = setTimeout(() => socket.destroy(new Error(`transfer took longer than ${data.timeoutMs} ms`)), data.timeoutMs);
  const frames = new FrameSocket(socket);
  try {
    const request: PullRequest = { type: 'pull', transfer: source.requestId, engine_id: source.engineId, shape: data.shape, hashes: job.hashes, first_block: job.firstBlock };
    frames.send(encodeJson(request));
    const reply = decodeJson<PullReply>(await frames.next(data.timeoutMs));
    if (reply.type === 'error') throw new Error(`producer refused: ${reply.error}`);
    if (reply.type !== 'blocks') throw new Error(`unexpected reply ${String((reply as { type: unknown }).type)}`);
    const mismatch = shapeMismatch(data.shape, reply.shape);
    if (mismatch) throw new Error(`KV shape mismatch: ${mismatch}`);
    const expected = job.hashes.length - job.firstBlock;
    if (!Array.isArray(reply.blocks) || reply.blocks.length !== expected) throw new Error(`expected ${expected} blocks, the producer announced ${reply.blocks?.length}`);
    const out = new Uint8Array(expected * data.blockBytes);
    for (const [i, digest] of reply.blocks.entries()) {
      const frame = await frames.next(data.timeoutMs);
      if (frame.kind !== FRAME_BYTES) throw new Error('expected block bytes');
      if (frame.payload.length !== digest.bytes || digest.bytes !== data.blockBytes) throw new Error(`block of ${frame.payload.length} bytes, announced ${digest.bytes}, a block holds ${data.blockBytes}`);
      if (sha256(frame.payload) !== digest.sha256) throw new Error('block checksum mismatch');
      out.set(frame.payload, i * data.blockBytes);
    }
    return { buffer: out.buffer, count: expected };
  } finally {
    clearTimeout(deadline);
    socket.destroy();
  }
}

/** The blocks of a pull of a shared-memory offer, copied out (the offer is consumed), or why not. */
function readShared(request: PullRequest, offer: SharedOffer): { buffer: ArrayBuffer; count: number } | { error: string } {
  const checked = checkPull(request, offer.transfer, data.engineId, data.shape);
  if ('error' in checked) return checked;
  const { keys, values, spanBytes } = offer.layout;
  const out = new Uint8Array(checked.blockIds.length * data.blockBytes);
  let at = 0;
  for (const block of checked.blockIds) {
    for (let l = 0; l < keys.length; l++) {
      out.set(keys[l].subarray(block * spanBytes, (block + 1) * spanBytes), at);
      out.set(values[l].subarray(block * spanBytes, (block + 1) * spanBytes), at + spanBytes);
      at += 2 * spanBytes;
    }
  }
  dropOffer(offer.transfer.requestId);
  post({ type: 'released', requestId: offer.transfer.requestId, reason: 'sent' });
  return { buffer: out.buffer, count: checked.blockIds.length };
}

/** Answers one pull: from shared memory here, or with what the engine thread gives for it. */
async function serve(socket: net.Socket): Promise<void> {
  sockets.add(socket);
  socket.on('close', () => sockets.delete(socket));
  const frames = new FrameSocket(socket);
  try {
    const request = decodeJson<PullRequest>(await frames.next(data.timeoutMs));
    const shared = sharedOffers.get(request.transfer);
    const id = nextRead++;
    const answer = shared
      ? readShared(request, shared)
      : await new Promise<{ buffer: ArrayBuffer; count: number } | { error: string }>((resolve) => {
          reads.set(id, resolve);
          post({ type: 'read', id, request });
        });
    if ('error' in answer) {
      frames.send(encodeJson({ type: 'error', error: answer.error }));
    } else {
      const bytes = Buffer.from(answer.buffer);
      const blocks = Array.from({ length: answer.count }, (_, i) => bytes.subarray(i * data.blockBytes, (i + 1) * data.blockBytes));
      frames.send(encodeJson({ type: 'blocks', shape: data.shape, blocks: blocks.map((b) => ({ bytes: b.length, sha256: sha256(b) })) }));
      for (const block of blocks) frames.send(encodeFrame(FRAME_BYTES, block));
    }
    socket.end();
  } catch {
    // A malformed or silent client: the engine thread gave nothing unless the pull was valid.
    socket.destroy();
  }
}
