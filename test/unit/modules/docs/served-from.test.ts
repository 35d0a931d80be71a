// The served spec's `servers` URL: forwarded headers only from trusted peers, http(s) only, a
// well-formed host only; anything else falls back to the default.

import type { FastifyRequest } from 'fastify';
import type { ServerConfig } from '../../../../src/config/server-config';
import { trustedProxies } from '../../../../src/config/trusted-proxies';
import { servedFrom } from '../../../../src/modules/docs/openapi';

function request(peer: string, headers: Record<string, string>): FastifyRequest {
  return { headers: { host: 'ortllm.internal:8000', ...headers }, protocol: 'http', raw: { socket: { remoteAddress: peer } } } as unknown as FastifyRequest;
}

const config = { rootPath: '/llm' } as ServerConfig;
const trusted = trustedProxies(['10.0.0.1']);
const served = (peer: string, headers: Record<string, string> = {}) => servedFrom(request(peer, headers), config, trusted);

describe('servedFrom', () => {
  it("takes a trusted proxy's X-Forwarded-Proto and -Host", () => {
    expect(served('10.0.0.1', { 'x-forwarded-proto': 'HTTPS', 'x-forwarded-host': 'api.example.com, inner' })).toBe('https://api.example.com/llm');
  });

  it("ignores an untrusted peer's forwarded headers", () => {
    expect(served('10.0.0.2', { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'evil.example' })).toBe('http://ortllm.internal:8000/llm');
  });

  it.each([
    [{ 'x-forwarded-proto': 'javascript' }],
    [{ 'x-forwarded-host': 'x"><script>alert(1)</script>' }],
    [{ 'x-forwarded-host': 'a.example/path?q' }],
    [{ 'x-forwarded-host': 'user@a.example' }],
  ])('falls back to the default for %j', (headers) => {
    expect(served('10.0.0.1', headers)).toBe('http://localhost:8000/llm');
  });

  it('keeps a bracketed IPv6 host with its port', () => {
    expect(served('10.0.0.1', { 'x-forwarded-host': '[fd00::1]:8443', 'x-forwarded-proto': 'https' })).toBe('https://[fd00::1]:8443/llm');
  });
});
