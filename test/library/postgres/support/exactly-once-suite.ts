import type { Redis } from 'ioredis';
import { createExactlyOnceTable } from '@redis-stream-coordinator/nestjs/postgres';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll } from 'vitest';
import { CoordinatorProcess } from '../../../support/coordinator-process.js';
import { createTestSchema, type TestSchema } from '../../../support/postgres-schema.js';
import { useRedisPrefix } from '../../../support/redis.js';

/** What {@link useExactlyOnceSuite} sets up; `coordinator` and `db` exist from `beforeAll` on. */
export interface ExactlyOnceSuite {
  readonly redis: { readonly prefix: string; redis(): Redis };
  readonly keys: KeySpace;
  readonly coordinator: CoordinatorProcess;
  readonly db: TestSchema;
}

/**
 * Registers one exactly-once suite's world: a coordinator on a unique key prefix declaring
 * `streams`, and a PostgreSQL schema of its own holding the offsets table and the suite's effects
 * table (`effectsDdl`, if any). Both are stopped and dropped after the suite.
 */
export function useExactlyOnceSuite(
  label: string,
  options: { streams: string; heartbeatIntervalMs: number; effectsDdl?: string },
): ExactlyOnceSuite {
  const redis = useRedisPrefix(label);
  let coordinator: CoordinatorProcess | undefined;
  let db: TestSchema | undefined;
  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: {
        STREAMS: options.streams,
        HEARTBEAT_INTERVAL_MS: String(options.heartbeatIntervalMs),
        SESSION_TIMEOUT_MS: '3000',
      },
    });
    db = await createTestSchema(label.replace(/-/g, '_'));
    await createExactlyOnceTable(db.pool);
    if (options.effectsDdl !== undefined) await db.pool.query(options.effectsDdl);
  });
  afterAll(async () => {
    await coordinator?.stop();
    await db?.drop();
  });
  const started = <T>(value: T | undefined, what: string): T => {
    if (value === undefined) throw new Error(`${label}: the ${what} is used before beforeAll ran`);
    return value;
  };
  return {
    redis,
    keys: new KeySpace(redis.prefix),
    get coordinator() {
      return started(coordinator, 'coordinator');
    },
    get db() {
      return started(db, 'PostgreSQL schema');
    },
  };
}
