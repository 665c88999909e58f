import { createClient } from 'redis';
import { connectRedis, connectRedis5 } from '../../test/support/redis-client.js';

/**
 * The clients a hand-written raw loop can be built on, each as a user would set it up for speed:
 * - `ioredis5`: ioredis 5 (the `ioredis5` npm alias), RESP2 (ioredis 5 speaks only RESP2);
 * - `ioredis6`: ioredis 6 with `protocol: 2` (RESP2, as the library's readers);
 * - `ioredis6-resp3`: ioredis 6 with its defaults (it sends `HELLO 3`);
 * - `node-redis`: the `redis` package, commands through `sendCommand`,
 *   which returns the reply as Redis sent it (no reshaping into objects), and `RESP: 2` (its
 *   default is RESP3).
 */
export const RAW_CLIENTS = ['ioredis5', 'ioredis6', 'ioredis6-resp3', 'node-redis'] as const;
export type RawClientName = (typeof RAW_CLIENTS)[number];

/** One entry of an `XREADGROUP` reply: id, then flat field/value pairs. */
export type RawEntry = [string, string[]];

/** The two commands a raw loop needs, on one connection of its own. */
export interface RawConnection {
  /** `XGROUP CREATE key group 0 MKSTREAM`, ignoring BUSYGROUP. */
  createGroup(key: string, group: string): Promise<void>;
  /** `XREADGROUP GROUP g c COUNT n BLOCK ms STREAMS key >`: the entries, or none. */
  read(
    key: string,
    group: string,
    consumer: string,
    count: number,
    blockMs: number,
  ): Promise<RawEntry[]>;
  /** `XACK key group ...ids`. */
  ack(key: string, group: string, ids: string[]): Promise<void>;
}

type Reply = Array<[string, RawEntry[]]> | null;

function entriesOf(reply: Reply): RawEntry[] {
  return reply?.[0]?.[1] ?? [];
}

function ignoreBusyGroup(error: unknown): void {
  if (!String(error).includes('BUSYGROUP')) throw error;
}

/** A connected raw-loop connection of `client` to `url`. */
export async function connectRaw(client: RawClientName, url: string): Promise<RawConnection> {
  if (client === 'node-redis') {
    // node-redis 6 defaults to RESP3 (a stream's entries then come as a map); RESP2 as the others
    const c = createClient({ url, RESP: 2 });
    await c.connect();
    return {
      createGroup: (key, group) =>
        c
          .sendCommand(['XGROUP', 'CREATE', key, group, '0', 'MKSTREAM'])
          .then(() => undefined, ignoreBusyGroup),
      read: async (key, group, consumer, count, blockMs) =>
        entriesOf(
          await c.sendCommand<Reply>([
            'XREADGROUP',
            'GROUP',
            group,
            consumer,
            'COUNT',
            String(count),
            'BLOCK',
            String(blockMs),
            'STREAMS',
            key,
            '>',
          ]),
        ),
      ack: async (key, group, ids) => {
        await c.sendCommand(['XACK', key, group, ...ids]);
      },
    };
  }
  const options = { maxRetriesPerRequest: null };
  const c =
    client === 'ioredis5'
      ? connectRedis5(url, options)
      : connectRedis(url, client === 'ioredis6' ? { ...options, protocol: 2 } : options);
  return {
    createGroup: (key, group) =>
      c.xgroup('CREATE', key, group, '0', 'MKSTREAM').then(() => undefined, ignoreBusyGroup),
    read: async (key, group, consumer, count, blockMs) =>
      entriesOf(
        (await c.xreadgroup(
          'GROUP',
          group,
          consumer,
          'COUNT',
          count,
          'BLOCK',
          blockMs,
          'STREAMS',
          key,
          '>',
        )) as Reply,
      ),
    ack: async (key, group, ids) => {
      await c.xack(key, group, ...ids);
    },
  };
}
