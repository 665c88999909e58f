import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import type { Cluster } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { createRedisConnection } from '../../../libs/stream-coordinator/src/redis/create-redis-connection.js';

/** The commands of one RESP request buffer (arrays of bulk strings, what ioredis sends). */
function* commands(buffer: { data: Buffer }): Generator<string[]> {
  for (;;) {
    const text = buffer.data.toString('latin1');
    const parts: string[] = [];
    let at = 0;
    const line = (): string | undefined => {
      const end = text.indexOf('\r\n', at);
      if (end < 0) return undefined;
      const value = text.slice(at, end);
      at = end + 2;
      return value;
    };
    const head = line();
    if (head === undefined || !head.startsWith('*')) return;
    for (let i = 0; i < Number(head.slice(1)); i++) {
      const size = line();
      if (size === undefined || text.length < at + Number(size.slice(1)) + 2) return;
      parts.push(text.slice(at, at + Number(size.slice(1))));
      at += Number(size.slice(1)) + 2;
    }
    buffer.data = buffer.data.subarray(at);
    yield parts;
  }
}

/**
 * A one-node "cluster" on a real socket: `CLUSTER SLOTS` gives every slot to itself, `GET`
 * answers `-MOVED <slot> <itself>` with the slot text given, anything else `+OK`.
 */
async function movingNode(slot: string): Promise<{ server: Server; port: number }> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    const buffer = { data: Buffer.alloc(0) };
    socket.on('data', (chunk) => {
      buffer.data = Buffer.concat([buffer.data, chunk]);
      for (const [name = '', sub = ''] of commands(buffer)) {
        const { port } = server.address() as AddressInfo;
        const command = `${name} ${sub}`.toUpperCase();
        if (command === 'CLUSTER SLOTS') {
          socket.write(`*1\r\n*3\r\n:0\r\n:16383\r\n*2\r\n$9\r\n127.0.0.1\r\n:${port}\r\n`);
        } else if (name.toUpperCase() === 'GET') {
          socket.write(`-MOVED ${slot} 127.0.0.1:${port}\r\n`);
        } else socket.write('+OK\r\n');
      }
    });
  });
  server.on('close', () => sockets.forEach((s) => s.destroy()));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port };
}

// Bundled readers' Cluster client (ioredis 5 + the MOVED guard ioredis 6 added): a MOVED reply
// whose slot is not a slot number fails the command and writes nothing into Array.prototype; a
// real MOVED is still followed (here back to the same node, until the redirection limit).
describe('reader Cluster connections and hostile MOVED replies', () => {
  let node: { server: Server; port: number } | undefined;
  let cluster: Cluster | undefined;

  afterEach(async () => {
    cluster?.disconnect();
    cluster = undefined;
    await new Promise((resolve) => (node ? node.server.close(resolve) : resolve(undefined)));
    node = undefined;
    // never leave a polluted prototype to the other tests of this worker
    delete (Array.prototype as unknown as Record<string, unknown>)['0'];
  });

  async function readerOn(slot: string): Promise<Cluster> {
    node = await movingNode(slot);
    cluster = createRedisConnection(
      { cluster: [{ host: '127.0.0.1', port: node.port }], clusterOptions: { maxRedirections: 3 } },
      'reader',
    ) as Cluster;
    return cluster;
  }

  it.each(['__proto__', 'constructor', '-1', '16384', '1e3', ''])(
    'MOVED with slot %j fails the command and pollutes nothing',
    async (slot) => {
      const reader = await readerOn(slot);
      await expect(reader.get('k')).rejects.toThrow(`MOVED ${slot} 127.0.0.1:`);
      expect(Object.prototype.hasOwnProperty.call(Array.prototype, '0')).toBe(false);
      expect(([] as unknown[])[0]).toBeUndefined();
    },
  );

  it('a MOVED with a real slot is followed', async () => {
    const reader = await readerOn('866');
    await expect(reader.get('k')).rejects.toThrow(/Too many Cluster redirections/);
  });
});
