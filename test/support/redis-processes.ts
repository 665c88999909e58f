/**
 * Extra `redis-server` processes for the fault and cluster suites. Every process is stopped by
 * its handle (`dispose()` / `stop()`), by {@link stopAllRedisProcesses}, and as a last resort at
 * process exit or SIGINT/SIGTERM (and by a watchdog if the test process is SIGKILLed).
 *
 * @packageDocumentation
 */
export { stopAllRedisProcesses } from './redis-process-tracker.js';
export type { Disposable } from './redis-process-tracker.js';
export {
  startRestartableRedis,
  type RestartableRedis,
  type RestartableRedisOptions,
} from './restartable-redis.js';
export {
  startRedisCluster,
  type ClusterNode,
  type RedisClusterHandle,
  type RedisClusterOptions,
  type SlotMigration,
} from './redis-cluster.js';
