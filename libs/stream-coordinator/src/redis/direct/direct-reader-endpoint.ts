import type { RedisOptions } from 'ioredis';
import type { ConnectionOptions as TlsConnectionOptions } from 'node:tls';

/** Where and how a direct reader connection connects (see {@link directReaderEndpoint}). */
export interface DirectReaderEndpoint {
  /** `net.connect` / `tls.connect` options: a Unix socket path, or host, port and family. */
  readonly socket: { path: string } | { host: string; port: number; family?: number };
  /** TLS options (`{}` for `rediss://`), or undefined for a plain socket. */
  readonly tls?: TlsConnectionOptions;
  /** `AUTH` arguments: `[user, password]` or `[password]` (as ioredis 5 decides them). */
  readonly auth?: readonly [string, string] | readonly [string];
  /** Database number (0: no `SELECT`). */
  readonly db: number;
  readonly connectTimeoutMs: number;
  /** TCP keep-alive initial delay; 0 turns keep-alive off. */
  readonly keepAliveMs: number;
  readonly noDelay: boolean;
  readonly connectionName?: string;
}

/** The ioredis options a direct connection honours. */
const HONOURED = new Set([
  'host',
  'port',
  'path',
  'family',
  'tls',
  'username',
  'password',
  'db',
  'connectTimeout',
  'keepAlive',
  'noDelay',
  'connectionName',
]);

/**
 * The ioredis options that do not apply to a shard reader's connection, whatever they are set
 * to: reconnection, queueing and retry policy (the reader replaces a lost connection itself, under
 * its own backoff and watchdog, and never resends a command), pipelining, client-side
 * decoration, and the Sentinel settings of a client without sentinels.
 */
const NOT_APPLICABLE = new Set([
  'retryStrategy',
  'reconnectOnError',
  'maxRetriesPerRequest',
  'autoResendUnfulfilledCommands',
  'autoResubscribe',
  'enableOfflineQueue',
  'enableReadyCheck',
  'lazyConnect',
  'maxLoadingRetryTime',
  'enableAutoPipelining',
  'autoPipeliningIgnoredCommands',
  'disconnectTimeout',
  'blockingTimeoutGrace',
  'showFriendlyErrorStack',
  'keyPrefix',
  'stringNumbers',
  'readOnly',
  'monitor',
  'scripts',
  'clientInfoTag',
  'disableClientInfo',
  'name',
  'role',
  'natMap',
  'sentinelRetryStrategy',
  'sentinelReconnectStrategy',
  'enableTLSForSentinelMode',
  'updateSentinels',
  'failoverDetector',
  'sentinelMaxConnections',
  'sentinelUsername',
  'sentinelPassword',
  'sentinelTLS',
  'sentinelCommandTimeout',
  'preferredSlaves',
  // ioredis 6 only (readers speak RESP2 and get replies as they come, on any client)
  'protocol',
  'replyMapping',
  'himportFieldsets',
]);

/**
 * The endpoint of a direct reader connection for `resolved` — the options of a standalone ioredis
 * 5 client as ioredis resolved them from the `redis` option (URL, query and defaults applied, so
 * both paths read a URL the same way) — or why a direct connection cannot stand in for ioredis:
 * Sentinel, a custom connector, an option it does not implement (`commandTimeout`,
 * `socketTimeout`, any it does not know) set to something other than ioredis's default, or a
 * number it needs (port, db, family, timeouts) that is not a whole number (a URL's query gives
 * strings, which ioredis passes on as they are).
 */
export function directReaderEndpoint(
  resolved: RedisOptions,
  defaults: Partial<RedisOptions>,
): DirectReaderEndpoint | { readonly unsupported: string } {
  if (resolved.sentinels !== null && resolved.sentinels !== undefined) {
    return { unsupported: 'the options name Sentinel nodes' };
  }
  for (const [key, value] of Object.entries(resolved)) {
    if (HONOURED.has(key) || NOT_APPLICABLE.has(key) || value === undefined) continue;
    if (value === (defaults as Record<string, unknown>)[key]) continue;
    return { unsupported: `the ioredis option ${key} is set` };
  }
  const numbers = {
    port: Number(resolved.port ?? 6379),
    db: Number(resolved.db ?? 0),
    family: Number(resolved.family ?? 0),
    connectTimeoutMs: Number(resolved.connectTimeout ?? 10_000),
    keepAliveMs: Number(resolved.keepAlive ?? 0),
  };
  for (const [name, value] of Object.entries(numbers)) {
    // (a URL's query gives strings; ioredis passes them on as they are)
    if (!Number.isSafeInteger(value) || value < 0) {
      return { unsupported: `${name} is ${JSON.stringify(String(value))}, not a whole number` };
    }
  }
  const tls =
    resolved.tls === undefined || (resolved.tls as unknown) === false
      ? undefined
      : typeof resolved.tls === 'object'
        ? resolved.tls
        : {};
  const socket =
    typeof resolved.path === 'string' && resolved.path !== ''
      ? { path: resolved.path }
      : {
          host: resolved.host ?? 'localhost',
          port: numbers.port,
          ...(numbers.family === 0 ? {} : { family: numbers.family }),
        };
  // ioredis 5: `username ? [username, password] : password`, sent when that is truthy
  const auth: DirectReaderEndpoint['auth'] = resolved.username
    ? [String(resolved.username), String(resolved.password ?? '')]
    : resolved.password
      ? [String(resolved.password)]
      : undefined;
  return {
    socket,
    ...(tls === undefined ? {} : { tls }),
    ...(auth === undefined ? {} : { auth }),
    db: numbers.db,
    connectTimeoutMs: numbers.connectTimeoutMs,
    keepAliveMs: numbers.keepAliveMs,
    noDelay: resolved.noDelay !== false,
    ...(resolved.connectionName ? { connectionName: resolved.connectionName } : {}),
  };
}
