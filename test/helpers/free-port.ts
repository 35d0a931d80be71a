// A TCP port free on 127.0.0.1 a moment ago, for daemons a test starts that cannot pick their own
// (Redis, Slurm, the ZMQ endpoints of --kv-events-config).

import { createServer } from 'node:net';

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}
