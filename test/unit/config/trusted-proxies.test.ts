import { isTrustedProxyEntry, trustedProxies } from '../../../src/config/trusted-proxies';

describe('--forwarded-allow-ips', () => {
  it('accepts addresses, CIDR ranges and *, nothing else', () => {
    for (const entry of ['127.0.0.1', '10.0.0.0/8', '::1', 'fd00::/8', '*']) expect(isTrustedProxyEntry(entry)).toBe(true);
    for (const entry of ['localhost', '10.0.0.0/33', '1.2.3', '10.0.0.0/8/1', '']) expect(isTrustedProxyEntry(entry)).toBe(false);
  });

  it('trusts listed peers (IPv4-mapped IPv6 included), and a Unix socket only with *', () => {
    const trusted = trustedProxies(['127.0.0.1', '10.0.0.0/8', 'fd00::/8']);
    expect(['127.0.0.1', '::ffff:127.0.0.1', '10.20.30.40', 'fd00::5'].map(trusted)).toEqual([true, true, true, true]);
    expect(['127.0.0.2', '192.168.1.1', '::1', undefined].map(trusted)).toEqual([false, false, false, false]);
    expect(trustedProxies(['*'])(undefined)).toBe(true);
  });
});
