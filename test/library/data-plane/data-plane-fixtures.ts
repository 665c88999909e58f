import type { Cluster, Redis } from 'ioredis';
import { afterEach } from 'vitest';
import type { StreamCatalog } from '../../../apps/coordinator/src/core/stream-catalog.js';
import { FenceWriter } from '../../../apps/coordinator/src/store/fence-writer.js';
import {
  ShardReader,
  type ShardReaderOptions,
} from '../../../libs/stream-coordinator/src/data-plane/index.js';
import {
  KeySpace,
  shardGateKey,
  shardMetaKey,
} from '../../../libs/stream-coordinator/src/protocol/index.js';
import {
  createReaderConnection,
  type ReaderRedis,
} from '../../../libs/stream-coordinator/src/redis/index.js';
import type { ReaderClient } from '../../../libs/stream-coordinator/src/interfaces/stream-coordinator-options.interface.js';
import { redisUrl } from '../../support/redis.js';

/** Keys of one test shard. */
export interface TestShard {
  stream: string;
  shard: number;
  key: string;
  meta: string;
  dlq: string;
}

/** The keys of shard `shard` of `stream` under `prefix`. */
export function testShard(prefix: string, stream = 'orders', shard = 0): TestShard {
  const keys = new KeySpace(prefix);
  const key = keys.shardKey(stream, shard);
  return { stream, shard, key, meta: shardMetaKey(key), dlq: keys.deadLetterKey(stream) };
}

/** A catalog that knows only the test shard (the fence writer needs its key). */
function catalogOf(shard: TestShard): StreamCatalog {
  return {
    view: () => undefined,
    knows: () => true,
    shardKey: () => shard.key,
  };
}

/**
 * Grants `shard` to `memberId` for `group` at group version `version` as the coordinator does:
 * its fence writer names the member in the meta hash and opens its read gate (and closes the
 * previous owner's), in one script. A grant older than one already applied is refused.
 */
export async function grant(
  redis: Redis | Cluster,
  shard: TestShard,
  group: string,
  memberId: string,
  version = 1,
): Promise<void> {
  await new FenceWriter(redis).apply(
    group,
    [{ stream: shard.stream, shard: shard.shard, from: null, to: memberId }],
    { incarnation: 1, version, commitId: '' },
    catalogOf(shard),
  );
}

/** Releases `shard` for `group` at `version` as the coordinator does (token and gate deleted). */
export async function release(
  redis: Redis | Cluster,
  shard: TestShard,
  group: string,
  version: number,
): Promise<void> {
  await new FenceWriter(redis).apply(
    group,
    [{ stream: shard.stream, shard: shard.shard, from: null, to: null }],
    { incarnation: 1, version, commitId: '' },
    catalogOf(shard),
  );
}

/** The read gate of `memberId` on `shard` for `group`. */
export function gateOf(shard: TestShard, group: string, memberId: string): string {
  return shardGateKey(shard.key, group, memberId);
}

/** Simulates the coordinator opening (or closing) a shard for writes. */
export async function setShardState(
  redis: Redis,
  key: string,
  state: 'open' | 'closed',
): Promise<void> {
  await redis.hset(shardMetaKey(key), 'state', state);
}

/** Appends `count` entries `{ seq }` (key `k<seq % keys>`), returns their ids. */
export async function fill(
  redis: Redis,
  key: string,
  count: number,
  first = 0,
  keys = 10,
): Promise<string[]> {
  const ids: string[] = [];
  for (let start = 0; start < count; start += 1000) {
    const pipeline = redis.pipeline();
    for (let i = start; i < Math.min(count, start + 1000); i++) {
      const seq = first + i;
      pipeline.xadd(key, '*', 'key', `k${seq % keys}`, 'payload', JSON.stringify({ seq }));
    }
    const results = (await pipeline.exec()) ?? [];
    for (const [error, id] of results) {
      if (error) throw error;
      ids.push(id as string);
    }
  }
  return ids;
}

/** A promise with its resolve function. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (value: T) => void } {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/** Pending entries of `group` on `key`: `[id, consumer, idleMs, deliveries]`. */
export async function pending(
  redis: Redis,
  key: string,
  group: string,
): Promise<Array<[string, string, number, number]>> {
  return (await redis.xpending(key, group, '-', '+', 1000)) as Array<
    [string, string, number, number]
  >;
}

/** The consumers of `group` on `key`: `[name, pending]`. */
export async function consumers(
  redis: Redis,
  key: string,
  group: string,
): Promise<Array<[string, number]>> {
  const rows = (await redis.xinfo('CONSUMERS', key, group)) as unknown[][];
  return rows.map((row) => {
    const fields = new Map<string, unknown>();
    for (let i = 0; i < row.length; i += 2) fields.set(String(row[i]), row[i + 1]);
    return [String(fields.get('name')), Number(fields.get('pending'))];
  });
}

/**
 * What the data-plane suites build readers with: the direct connection (the default), except in
 * the CI lane on ioredis 5 (`RSC_IOREDIS=5`), which runs them on the bundled ioredis 5 instead, so
 * fencing, ordering and failure suites cover both kinds of reader connection.
 */
export const TEST_READER_CLIENT: ReaderClient =
  process.env.RSC_IOREDIS === '5' ? 'bundled' : 'direct';

/** A new reader connection of {@link TEST_READER_CLIENT} to `url` (default: the suite's Redis). */
export function testReaderConnection(url?: string, connectionName?: string): ReaderRedis {
  return createReaderConnection(url ?? redisUrl(), {
    readerClient: TEST_READER_CLIENT,
    ...(connectionName === undefined ? {} : { connectionName }),
  });
}

/** What a test passes to create a reader: the test shard instead of stream/shard/key. */
export type TestReaderOptions = Partial<Omit<ShardReaderOptions, 'shard'>> &
  Pick<ShardReaderOptions, 'handle' | 'memberId' | 'group'> & { shard: TestShard; url?: string };

/** Creates readers and stops every one of them after each test. */
export function useReaders(): (options: TestReaderOptions) => ShardReader {
  const readers: ShardReader[] = [];
  afterEach(async () => {
    await Promise.all(readers.splice(0).map((reader) => reader.stop()));
  });
  return ({ shard, url, ...options }) => {
    const reader = new ShardReader({
      createConnection: () => testReaderConnection(url),
      stream: shard.stream,
      shard: shard.shard,
      key: shard.key,
      deadLetterKey: shard.dlq,
      blockMs: 500,
      ...options,
    });
    readers.push(reader);
    return reader;
  };
}

/** The `payload.seq` of a JSON message. */
export function seqOf(payload: unknown): number {
  return (payload as { seq: number }).seq;
}
