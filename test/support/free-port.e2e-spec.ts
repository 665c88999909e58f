import { existsSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ephemeralPortRange, freePort, freePortPair, isPortFree } from './free-port.js';

describe('freePort', () => {
  const servers: Server[] = [];
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) socket.destroy();
    await Promise.all(servers.splice(0).map((s) => new Promise((done) => s.close(done))));
  });

  // (read from Linux's /proc; elsewhere the range is Linux's default and this does not hold)
  it.runIf(existsSync('/proc/sys/net/ipv4/ip_local_port_range'))(
    'reads the ephemeral range the OS gives outgoing connections',
    async () => {
      const { low, high } = ephemeralPortRange();
      const server = createServer();
      servers.push(server);
      await new Promise<void>((done) => server.listen({ port: 0, host: '127.0.0.1' }, done));
      const address = server.address();
      if (address === null || typeof address === 'string') throw new Error('no address');
      const socket = connect({ port: address.port, host: '127.0.0.1' });
      sockets.push(socket);
      await new Promise((done) => socket.once('connect', done));
      expect(socket.localPort).toBeGreaterThanOrEqual(low);
      expect(socket.localPort).toBeLessThanOrEqual(high);
    },
  );

  // (a host whose ephemeral range starts below 11000 leaves no room: freePort falls back to the OS)
  const room = ephemeralPortRange().low - 10_000 >= 1_000;

  it.runIf(room)(
    'picks free ports an outgoing connection cannot take (below the ephemeral range)',
    async () => {
      const { low } = ephemeralPortRange();
      const ports = new Set<number>();
      for (let i = 0; i < 20; i++) {
        const port = await freePort();
        expect(port).toBeLessThan(low);
        expect(await isPortFree(port, '0.0.0.0')).toBe(true);
        ports.add(port);
      }
      expect(ports.size).toBe(20); // never the same port twice in a row
    },
  );

  it.runIf(room)('picks pairs with both ends free and below the ephemeral range', async () => {
    const { low } = ephemeralPortRange();
    const port = await freePortPair();
    expect(port + 10_000).toBeLessThan(low);
    expect(await isPortFree(port)).toBe(true);
    expect(await isPortFree(port + 10_000)).toBe(true);
  });
});
