import type { Redis } from 'ioredis';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { assignorRegistry } from '../../../apps/coordinator/src/core/assignors/builtin-assignors.js';
import { GroupCoordinator } from '../../../apps/coordinator/src/groups/group-coordinator.js';
import { NudgePublisher } from '../../../apps/coordinator/src/groups/nudge-publisher.js';
import { RedisClock } from '../../../apps/coordinator/src/store/redis-clock.js';
import { FenceWriter } from '../../../apps/coordinator/src/store/fence-writer.js';
import { GroupStore } from '../../../apps/coordinator/src/store/group-store.js';
import { StreamRegistry } from '../../../apps/coordinator/src/store/stream-registry.js';
import { createTestRedis } from '../../support/redis.js';

/** Options of {@link startInProcessCoordinator}. */
export interface InProcessCoordinatorOptions {
  readonly prefix: string;
  /** Streams to create (idempotent): name → shard count. */
  readonly streams?: Readonly<Record<string, number>>;
  readonly sessionTimeoutMs?: number;
  readonly heartbeatIntervalMs?: number;
  /** Replaces the fence writer (e.g. one that fails, to simulate a crash after a commit). */
  readonly fences?: (redis: Redis) => FenceWriter;
}

/** One coordinator "replica" as plain objects over its own Redis connection (no Nest, no HTTP). */
export interface InProcessCoordinator {
  readonly coordinator: GroupCoordinator;
  readonly store: GroupStore;
  readonly registry: StreamRegistry;
  readonly keys: KeySpace;
  readonly redis: Redis;
  close(): Promise<void>;
}

/**
 * Wires the coordinator's group service by hand, as `GroupsModule` does, so a test can drive it
 * directly (call `expire`, inject a failing fence writer) — several of them on one prefix act as
 * replicas.
 */
export async function startInProcessCoordinator(
  options: InProcessCoordinatorOptions,
): Promise<InProcessCoordinator> {
  const redis = createTestRedis();
  const keys = new KeySpace(options.prefix);
  const store = new GroupStore(redis, keys, { maxLen: 10_000, maxAgeMs: 0 });
  const registry = new StreamRegistry(redis, keys);
  const clock = new RedisClock();
  const coordinator = new GroupCoordinator(
    store,
    registry,
    options.fences ? options.fences(redis) : new FenceWriter(redis),
    new NudgePublisher(redis, keys),
    {
      heartbeatIntervalMs: options.heartbeatIntervalMs ?? 1000,
      sessionTimeoutMs: options.sessionTimeoutMs ?? 60_000,
      groupMaxSize: 1000,
      defaultAssignor: 'uniform',
      assignors: assignorRegistry(),
    },
    clock,
  );
  await registry.refresh();
  for (const [stream, shards] of Object.entries(options.streams ?? {})) {
    await registry.create(stream, shards, Date.now());
  }
  return {
    coordinator,
    store,
    registry,
    keys,
    redis,
    async close() {
      redis.disconnect();
    },
  };
}
