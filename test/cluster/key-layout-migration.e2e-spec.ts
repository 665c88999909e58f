import { afterAll, beforeAll, describe, it } from 'vitest';
import {
  createRedisConnection,
  type RedisConnection,
} from '@redis-stream-coordinator/nestjs/internal';
import { runKeyLayoutMigrationScenario } from '../support/key-layout-migration-scenario.js';
import { startRedisCluster, type RedisClusterHandle } from '../support/redis-cluster.js';

/**
 * The key layout migration on a real 3-master Redis Cluster: the new names hash to other slots
 * than the old ones, so the tool must copy across nodes (DUMP/RESTORE) and scan every master.
 */
describe('moving a Redis Cluster deployment to the current key layout', () => {
  let cluster: RedisClusterHandle;
  let redis: RedisConnection;
  beforeAll(async () => {
    cluster = await startRedisCluster();
    redis = createRedisConnection(cluster.url, 'command');
  }, 60_000);
  afterAll(async () => {
    redis?.disconnect();
    await cluster?.stop();
  });

  it('refuses, migrates across slots, and the coordinator resumes exactly where it was', async () => {
    await runKeyLayoutMigrationScenario(cluster.url, redis, 'rsc-migrate');
  });
});
