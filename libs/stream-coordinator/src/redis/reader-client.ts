import { Cluster, Redis } from 'ioredis';
import { Redis as Redis5 } from 'ioredis5';
import { ReaderCluster } from './reader-cluster.js';

/** The two client classes a connection can be built with. */
export interface RedisClientClasses {
  readonly Redis: typeof Redis;
  readonly Cluster: typeof Cluster;
  /** The client speaks RESP2 only and has no `protocol` option. */
  readonly resp2Only: boolean;
}

/**
 * The application's ioredis (the peer dependency, 5 or 6): every role but `reader`, and readers
 * too with `readerClient: 'application'`.
 */
export const APPLICATION_CLIENT: RedisClientClasses = { Redis, Cluster, resp2Only: false };

/**
 * What shard readers are built with when they are not direct connections (module option
 * `readerClient: 'bundled'`, and `'direct'` on a Cluster or through Sentinel, see
 * `create-reader-connection.ts`): ioredis 5, a dependency of the library itself (the npm alias
 * `ioredis5`), whichever ioredis the application installed.
 *
 * Why: a reader spends most of its client time decoding `XREADGROUP` replies, and ioredis 6.0.0's
 * reply decoder is ≈ 4.7× slower than ioredis 5's `redis-parser` on them (its build turns each
 * private-field access into a `WeakMap` lookup; `bench/decoder-micro.ts` and the upstream write-up
 * in `bench/benchmarks-notes.md`). Measured in one run on the same member at 8 shards, batch 100:
 * consumer CPU per message fell from ≈ 5.1 to ≈ 2.7 µs with readers on ioredis 5 (the raw
 * ioredis 5 loop: ≈ 2.3–3.0 µs in the same run). Only reader connections change: the library
 * creates them from the same `redis` option and never hands them out, so the application's own
 * client and every connection it can reach keep its ioredis. What differs for them (ioredis 6
 * fixes and defaults, instrumentation that patches `ioredis`) is listed in the package README,
 * "Install"; `createRedisConnection` gives bundled readers ioredis 6's `keepAlive` default, and
 * their Cluster client is {@link ReaderCluster}, with ioredis 6's guard on `MOVED` replies.
 */
export const READER_CLIENT: RedisClientClasses = {
  // (the same constructors, options and methods the library uses, typed by the peer's major)
  Redis: Redis5 as unknown as typeof Redis,
  Cluster: ReaderCluster as unknown as typeof Cluster,
  resp2Only: true,
};
