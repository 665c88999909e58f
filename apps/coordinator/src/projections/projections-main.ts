import { createRedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import {
  parseProjectionArgs,
  ProjectionToolUsageError,
  runProjectionTool,
} from './projection-tool.js';

/**
 * `npm run projections -- <rebuild|verify|show> [--group <id>]...`: rebuilds the monitoring
 * projections of groups from their event logs alone, with the coordinator's environment
 * (`REDIS_URL`, `KEY_PREFIX`, `DEFAULT_ASSIGNOR`). Exit code 0 on success, 1 when a group could
 * not be rebuilt (or, for `verify`, differs from its live state), 2 on a bad command line.
 */
async function main(): Promise<number> {
  let args;
  try {
    args = parseProjectionArgs(process.argv.slice(2));
  } catch (error) {
    if (error instanceof ProjectionToolUsageError) {
      process.stderr.write(`${error.message}\n`);
      return 2;
    }
    throw error;
  }
  const redis = createRedisConnection(
    process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    'command',
    {
      connectionName: 'rsc-projections',
      maxRetriesPerRequest: 1,
    },
  );
  try {
    return await runProjectionTool(redis, {
      ...args,
      keyPrefix: process.env.KEY_PREFIX || 'rsc',
      defaultAssignor: process.env.DEFAULT_ASSIGNOR || 'uniform',
      print: (line) => process.stdout.write(`${line}\n`),
    });
  } finally {
    redis.disconnect();
  }
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`projections: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});
