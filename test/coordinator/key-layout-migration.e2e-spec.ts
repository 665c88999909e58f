import { describe, it } from 'vitest';
import { runKeyLayoutMigrationScenario } from '../support/key-layout-migration-scenario.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';

describe('moving an existing deployment to the current key layout', () => {
  const { prefix, redis } = useRedisPrefix('key-migration');

  it('refuses to start on the old layout; migrate-keys moves every group and the catalog, splits the shared meta hash and repairs the wiped one', async () => {
    await runKeyLayoutMigrationScenario(redisUrl(), redis(), prefix);
  });
});
