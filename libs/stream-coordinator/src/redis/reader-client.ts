import { Cluster, Redis } from 'ioredis';
import { Cluster as Cluster5, Redis as Redis5 } from 'ioredis5';

/** The two client classes a connection can be built with. */
export interface RedisClientClasses {
  readonly Redis: typeof Redis;
  readonly Cluster: typeof Cluster;
  /** The client speaks RESP2 only and has no `protocol` option. */
  readonly resp2Only: boolean;
}

/** The application's ioredis (the peer dependency, 5 or 6): every role but `reader`. */
export const APPLICATION_CLIENT: RedisClientClasses = { Redis, Cluster, resp2Only: false };

/**
 * What shard readers are built with: ioredis 5, a dependency of the library itself (the npm alias
 * `ioredis5`), whichever ioredis the application installed.
 *
 * Why: a reader spends most of its client time decoding `XREADGROUP` replies, and ioredis 6.0.0's
 * reply decoder is ≈ 4.7× slower than ioredis 5's `redis-parser` on them (its build turns each
 * private-field access into a `WeakMap` lookup; `bench/decoder-micro.ts` and the upstream write-up
 * in `bench/benchmarks-notes.md`). Measured in one run on the same member at batch 100, consumer
 * CPU per message fell from ≈ 5.1 to ≈ 2.3 µs with readers on ioredis 5 (the raw ioredis 5 loop:
 * ≈ 2.3 µs). Only reader connections change: they are created and used by the library alone
 * (their options come from the same `redis` option; the two majors read them alike), so the
 * application's own client and every connection it can reach keep its ioredis.
 */
export const READER_CLIENT: RedisClientClasses = {
  // (the same constructors, options and methods the library uses, typed by the peer's major)
  Redis: Redis5 as unknown as typeof Redis,
  Cluster: Cluster5 as unknown as typeof Cluster,
  resp2Only: true,
};
