// --forwarded-allow-ips (uvicorn's flag): which peers may set X-Forwarded-Proto / -Host. A list
// of IP addresses and CIDR ranges, or '*' for any; uvicorn's default trusts 127.0.0.1 only.

import { BlockList, isIP } from 'node:net';

/** Whether `entry` is '*', an IP address or a CIDR range. */
export function isTrustedProxyEntry(entry: string): boolean {
  if (entry === '*') return true;
  const [address, prefix, ...rest] = entry.split('/');
  if (rest.length > 0 || !isIP(address)) return false;
  if (prefix === undefined) return true;
  const max = isIP(address) === 4 ? 32 : 128;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= max;
}

/** A test of a peer address (undefined for a Unix socket, trusted only by '*'). */
export function trustedProxies(entries: readonly string[]): (address: string | undefined) => boolean {
  if (entries.includes('*')) return () => true;
  const list = new BlockList();
  for (const entry of entries) {
    const [address, prefix] = entry.split('/');
    const family = isIP(address) === 4 ? 'ipv4' : 'ipv6';
    if (prefix === undefined) list.addAddress(address, family);
    else list.addSubnet(address, Number(prefix), family);
  }
  return (address) => {
    if (!address) return false;
    // A dual-stack socket reports IPv4 peers as ::ffff:a.b.c.d.
    const plain = address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
    return list.check(plain, isIP(plain) === 4 ? 'ipv4' : 'ipv6');
  };
}
