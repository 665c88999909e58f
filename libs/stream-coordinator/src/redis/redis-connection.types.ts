import type { Cluster, Redis } from 'ioredis';
import type { DirectReaderClient } from './direct/direct-reader-client.js';

/**
 * A connection to the data plane: a standalone `Redis` client or a `Cluster` client. Everything
 * the data plane sends works on both (single-key commands and same-slot Lua scripts).
 */
export type RedisConnection = Redis | Cluster;

/**
 * What a connection is used for:
 * - `command` — the shared connection for publishing and short commands;
 * - `reader` — a dedicated connection of one shard reader (it blocks in `XREADGROUP … BLOCK`, so it is
 *   never shared), tuned so that commands fail fast instead of queuing for ever;
 * - `subscriber` — a pub/sub connection.
 */
export type RedisConnectionRole = 'command' | 'reader' | 'subscriber';

/**
 * A shard reader's dedicated connection: the library's direct connection (module option
 * `readerClient: 'direct'`, for a standalone Redis) or an ioredis client (Cluster, Sentinel,
 * `'bundled'`, `'application'`). The data plane uses only what both have, with the same names and
 * reply shapes (see {@link DirectReaderClient}).
 */
export type ReaderRedis = RedisConnection | DirectReaderClient;
