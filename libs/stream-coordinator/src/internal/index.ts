/**
 * `@redis-stream-coordinator/nestjs/internal`: Redis helpers the coordinator app shares with the
 * library (closing a connection, bounded probes, URL schemes, `XINFO GROUPS` replies). Not part of the public API: no
 * compatibility promise between versions.
 *
 * @packageDocumentation
 */
export { closeConnection } from '../redis/close-connection.js';
export { pingRedis, unreachableReason, withTimeout } from '../redis/bounded-call.js';
export { isRedisUrl } from '../redis/redis-url.js';
export { parseXinfoGroups, type XinfoGroup } from '../redis/xinfo-groups.js';
