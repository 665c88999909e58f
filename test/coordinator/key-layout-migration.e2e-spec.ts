import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { LegacyKeyLayout } from '../../apps/coordinator/src/key-layout/legacy-key-layout.js';
import {
  keysMatching,
  runKeyLayoutMigrationScenario,
  runMigrateKeys,
} from '../support/key-layout-migration-scenario.js';
import { CoordinatorApi } from '../support/coordinator-process.js';
import { runNodeTool } from '../support/child-run.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';
import { repoRoot } from '../support/service-process.js';
import { useCoordinator } from './support/coordinator-fixture.js';

describe('moving an existing deployment to the current key layout', () => {
  const { prefix, redis } = useRedisPrefix('key-migration');

  it('refuses to start on the old layout; migrate-keys moves every group and the catalog, splits the shared meta hash and repairs the wiped one', async () => {
    await runKeyLayoutMigrationScenario(redisUrl(), redis(), prefix);
  });
});

describe('migrate-keys while a coordinator of the old layout still runs', () => {
  const { prefix, redis } = useRedisPrefix('key-migration-busy');

  it('refuses while the old layout records answered heartbeats (no readiness probe needed), moves once they are 10 s old', async () => {
    const legacy = new LegacyKeyLayout(prefix);
    const [seconds] = await redis().time();
    const now = Number(seconds) * 1000;
    // What an old coordinator without a polled readiness probe leaves: a catalog, a group, and
    // the Redis time of the heartbeat it answered a moment ago.
    await redis().sadd(legacy.catalogKey('groups'), 'shop');
    await redis().set(legacy.catalogKey('catalog-version'), '1');
    await redis().hset(legacy.groupKey('shop', 'meta'), 'version', '3', 'createdAt', '1');
    await redis().zadd(legacy.groupKey('shop', 'seen'), now, 'member-1');
    const before = await keysMatching(redis(), `${prefix}:*`);

    const busy = await runMigrateKeys(redisUrl(), prefix);
    expect(busy.code, busy.output).toBe(1);
    expect(busy.output).toContain('shop');
    expect(busy.output).toContain('stop every coordinator replica');
    expect(await keysMatching(redis(), `${prefix}:*`)).toEqual(before);

    // Every coordinator stopped 10 s ago: the last answered heartbeat is that old.
    await redis().zadd(legacy.groupKey('shop', 'seen'), now - 10_001, 'member-1');
    const run = await runMigrateKeys(redisUrl(), prefix);
    expect(run.code, run.output).toBe(0);
    const keys = new KeySpace(prefix);
    expect(await redis().zscore(keys.groupSeenKey('shop'), 'member-1')).toBe(String(now - 10_001));
    expect(await keysMatching(redis(), `${prefix}:{g:*`)).toEqual([]);
  });
});

describe('migrate-keys when both layouts hold a key', () => {
  const { prefix, redis } = useRedisPrefix('key-migration-both');

  it('never overwrites current state that differs (an old coordinator started after the move), finishes a copy left by an interrupted run', async () => {
    const legacy = new LegacyKeyLayout(prefix);
    const keys = new KeySpace(prefix);
    // The current catalog after the move, and the one an old coordinator declared since.
    await redis().hset(keys.streamsKey(), 'orders', '{"current":true}');
    await redis().hset(legacy.catalogKey('streams'), 'orders', '{"redeclared":true}');
    // A group whose meta a stopped run had copied but not yet deleted, and one it never reached.
    await redis().hset(legacy.groupKey('shop', 'meta'), 'version', '3');
    await redis().hset(keys.groupMetaKey('shop'), 'version', '3');
    await redis().hset(legacy.groupKey('billing', 'meta'), 'version', '5');
    await redis().hset(keys.groupMetaKey('billing'), 'version', '9');
    const before = await keysMatching(redis(), `${prefix}:*`);

    const refused = await runMigrateKeys(redisUrl(), prefix);
    expect(refused.code, refused.output).toBe(1);
    expect(refused.output).toContain(legacy.catalogKey('streams'));
    expect(refused.output).toContain(legacy.groupKey('billing', 'meta'));
    expect(refused.output).not.toContain(legacy.groupKey('shop', 'meta'));
    expect(await keysMatching(redis(), `${prefix}:*`)).toEqual(before);
    expect(await redis().hgetall(keys.streamsKey())).toEqual({ orders: '{"current":true}' });
    expect(await redis().hget(keys.groupMetaKey('billing'), 'version')).toBe('9');

    // The operator drops what the old coordinator wrote; the run then completes.
    await redis().del(legacy.catalogKey('streams'), legacy.groupKey('billing', 'meta'));
    const run = await runMigrateKeys(redisUrl(), prefix);
    expect(run.code, run.output).toBe(0);
    expect(await keysMatching(redis(), `${prefix}:{g:*`)).toEqual([]);
    expect(await redis().hget(keys.groupMetaKey('shop'), 'version')).toBe('3');
    expect(await redis().hgetall(keys.streamsKey())).toEqual({ orders: '{"current":true}' });
  });
});

describe('a coordinator of the old layout that starts after the move', () => {
  const fx = useCoordinator('key-layout-ready');

  it('turns /health/ready down while the old catalog is back, with the reason, and up once it is gone', async () => {
    // details are shown to authenticated callers only (docs/protocol.md §15.1)
    const api = new CoordinatorApi(fx.coordinator().url);
    type Ready = { status: string; details?: Record<string, { status: string; reason?: string }> };
    expect((await api.get<Ready>('/health/ready')).status).toBe(200);

    // What an old coordinator does on this prefix when it starts: declare STREAMS in `{m}`.
    const legacy = new LegacyKeyLayout(fx.prefix);
    await fx.redis().hset(legacy.catalogKey('streams'), 'orders', '{}');
    const down = await api.get<Ready>('/health/ready');
    expect(down.status).toBe(503);
    expect(down.body.details?.keyLayout?.status).toBe('down');
    expect(down.body.details?.keyLayout?.reason).toContain(legacy.catalogKey('streams'));
    expect(down.body.details?.persistence?.status).toBe('up');

    await fx.redis().del(legacy.catalogKey('streams'));
    const up = await api.get<Ready>('/health/ready');
    expect(up.status).toBe(200);
    expect(up.body.details?.keyLayout?.status).toBe('up');
  });
});

describe('the projections tool on the old layout', () => {
  const { prefix, redis } = useRedisPrefix('key-migration-projections');

  it('exits 1 with the migration hint instead of verifying no group at all', async () => {
    const legacy = new LegacyKeyLayout(prefix);
    await redis().sadd(legacy.catalogKey('groups'), 'shop');
    await redis().hset(legacy.catalogKey('streams'), 'orders', '{}');
    const before = await keysMatching(redis(), `${prefix}:*`);
    const run = await runNodeTool(
      resolve(repoRoot(), 'apps/coordinator/dist/projections/projections-main.js'),
      ['verify'],
      { REDIS_URL: redisUrl(), KEY_PREFIX: prefix },
    );
    expect(run.code, run.stdout + run.stderr).toBe(1);
    expect(run.stderr).toContain(legacy.catalogKey('groups'));
    expect(run.stderr).toContain('migrate-keys');
    expect(await keysMatching(redis(), `${prefix}:*`)).toEqual(before);
  });
});
