// `bench serve`'s request over kept-alive sockets: a socket the server dropped while it sat in the
// pool must cost a resend, not a failed request (llama.cpp's server drops them between requests).
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Socket } from 'node:net';
import { sendBenchRequest } from '../../../src/cli/bench/request';

function streamedCompletion(res: http.ServerResponse, text: string): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  res.write(`data: ${JSON.stringify({ choices: [{ text }] })}\n\n`);
  res.write(`data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 3, completion_tokens: 1 } })}\n\n`);
  res.end('data: [DONE]\n\n');
}

describe('bench serve request', () => {
  let server: http.Server;
  let url: string;
  const requestsPerSocket = new Map<Socket, number>();

  beforeAll(async () => {
    // Answers the first request on each connection; a second one on the same connection finds it
    // dropped, as a kept-alive socket the server closed while it was idle does.
    server = http.createServer((req, res) => {
      const seen = (requestsPerSocket.get(req.socket) ?? 0) + 1;
      requestsPerSocket.set(req.socket, seen);
      req.resume();
      req.on('end', () => {
        if (seen > 1) req.socket.destroy();
        else streamedCompletion(res, `answer ${requestsPerSocket.size}`);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1/completions`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('resends on a fresh socket when a kept-alive one was dropped, and times the resend', async () => {
    const input = { url, chat: false, model: 'm', prompt: 'p', maxTokens: 1, headers: {}, extra: {} };
    const first = await sendBenchRequest(input);
    expect(first).toMatchObject({ success: true, error: '', outputTokens: 1, generatedText: 'answer 1' });

    const second = await sendBenchRequest(input);
    expect(second).toMatchObject({ success: true, error: '', outputTokens: 1, generatedText: 'answer 2' });
    expect(second.ttft).toBeGreaterThan(0);
    expect(second.latency).toBeGreaterThanOrEqual(second.ttft);
    // Two connections: the dropped one carried a request the server never answered.
    expect(requestsPerSocket.size).toBe(2);
    expect([...requestsPerSocket.values()].sort()).toEqual([1, 2]);
  });

  it('keeps resending while the pool hands it dropped sockets (after a burst of concurrent requests)', async () => {
    requestsPerSocket.clear();
    const input = { url, chat: false, model: 'm', prompt: 'p', maxTokens: 1, headers: {}, extra: {} };
    // Three at once leave three kept-alive sockets in the pool, each of which the server drops.
    const burst = await Promise.all([1, 2, 3].map(() => sendBenchRequest(input)));
    expect(burst.map((r) => r.success)).toEqual([true, true, true]);

    const after = await sendBenchRequest(input);
    expect(after).toMatchObject({ success: true, error: '', outputTokens: 1 });
    // The three pooled sockets each carried one unanswered request; a fourth, fresh one answered.
    expect(requestsPerSocket.size).toBe(4);
    expect([...requestsPerSocket.values()].filter((n) => n === 2)).toHaveLength(3);
  });
});
