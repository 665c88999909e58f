import { createRedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { KeyLayoutMigration } from './key-layout-migration.js';

/**
 * `npm run migrate-keys`: moves the coordinator's control-plane keys from the old key layout
 * (`{g:<group>}`, `{m}`) to the current one, with the coordinator's environment (`REDIS_URL`,
 * `KEY_PREFIX`). Run it with every coordinator replica stopped (docs/operations.md, "Moving to the
 * current key layout"). Exit code 0 when Redis is in the current layout afterwards (also when
 * there was nothing to move), 1 on an error or when a coordinator of the old layout still runs (it answered a readiness
 * probe or a heartbeat in the last 10 s).
 */
async function main(): Promise<number> {
  const redis = createRedisConnection(
    process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    'command',
    { connectionName: 'rsc-migrate-keys', maxRetriesPerRequest: 1 },
  );
  const print = (line: string): void => {
    process.stdout.write(`${line}\n`);
  };
  try {
    const migration = new KeyLayoutMigration(
      redis,
      new KeySpace(process.env.KEY_PREFIX || 'rsc'),
      print,
    );
    const activity = await migration.oldCoordinatorActivity();
    if (activity !== null) {
      process.stderr.write(
        `migrate-keys: ${activity}; stop every coordinator replica, wait 10 s and run again ` +
          '(nothing was moved)\n',
      );
      return 1;
    }
    const markers = await migration.legacyMarkers();
    if (markers.length === 0) {
      print('nothing to migrate: no key of the old layout found');
    }
    await migration.run();
    const left = await migration.legacyMarkers();
    if (left.length > 0) throw new Error(`keys of the old layout are left: ${left.join(', ')}`);
    return 0;
  } finally {
    redis.disconnect();
  }
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`migrate-keys: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});
