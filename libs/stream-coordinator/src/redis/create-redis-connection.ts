import type { Cluster, ClusterOptions, RedisOptions } from 'ioredis';
import type { DataPlaneLogger } from '../interfaces/data-plane-logger.interface.js';
import { RedisConnectionOptionsError } from '../errors/redis/redis-connection-options.error.js';
import type {
  RedisClusterNode,
  RedisConnectionOptions,
} from '../interfaces/redis-connection-options.interface.js';
import type { DirectReaderClient } from './direct/direct-reader-client.js';
import type { RedisConnection, RedisConnectionRole } from './redis-connection.types.js';
import type { ReaderClient } from '../interfaces/stream-coordinator-options.interface.js';
import { APPLICATION_CLIENT, READER_CLIENT, type RedisClientClasses } from './reader-client.js';
import { redisUrlScheme } from './redis-url.js';

/**
 * Extras for {@link createRedisConnection}.
 */
export interface CreateRedisConnectionExtras {
  /** `CLIENT SETNAME` of the connection (shows in `CLIENT LIST`). */
  connectionName?: string;
  /**
   * Where connection errors are logged. An `error` listener is always attached, so a Redis
   * outage never crashes the process; the first error after each successful connect is logged
   * as a warning, repeats at debug level.
   */
  logger?: DataPlaneLogger;
  /** Do not connect before the first command (ioredis `lazyConnect`). */
  lazyConnect?: boolean;
  /**
   * How many reconnect attempts a queued command waits for before it fails (ioredis
   * `maxRetriesPerRequest`; its default, 20, can hold a command for about ten seconds).
   */
  maxRetriesPerRequest?: number;
  /**
   * Which ioredis a `reader` connection is built with (the module option `readerClient`):
   * the library's own ioredis 5 (`'bundled'`, and `'direct'`, which
   * `createReaderConnection` builds here only when the options need ioredis), or
   * `'application'`, the application's.
   */
  readerClient?: ReaderClient;
  /** Shared by the connections whose errors are logged as one (see {@link ConnectionErrorLog}). */
  errorLog?: ConnectionErrorLog;
}

/**
 * Options every `reader` connection gets (they win over the user's): a command queued while
 * the connection is down fails after one reconnect attempt, so the shard reader's own backoff,
 * watchdog and reclaim logic takes over instead of a queue that waits for ever; and a command
 * whose reply was lost with the connection is not sent again after the reconnect
 * (`autoResendUnfulfilledCommands: false`). A resent `XREADGROUP … >` would read the entries
 * after the ones the lost reply carried (those stay pending, unseen) and the reader would handle
 * the later entries first. Unsent, the call would never be answered: the reader ends it as soon
 * as the connection reports `close` (or at its watchdog when the socket just goes quiet), then
 * goes through its claim phase, which takes the pending entries back in id order before any new
 * read.
 *
 * Readers speak RESP2. Built with the bundled ioredis 5 (see `READER_CLIENT`), it is its only
 * protocol and a `protocol` option is dropped for them; built with the application's ioredis
 * (module option `readerClient: 'application'`) they get `protocol: 2` (and the reply mapping
 * RESP2 allows, `'legacy'`), because ioredis 6
 * decodes an `XREADGROUP` reply far faster in RESP2 than in RESP3 (its default), for the same
 * reply shapes. Readers use no RESP3-only feature (no client-side caching, no push replies:
 * nudges arrive on the subscriber connection).
 */
const READER_OPTIONS: RedisOptions = {
  maxRetriesPerRequest: 1,
  autoResendUnfulfilledCommands: false,
};

/**
 * Defaults of readers on the bundled ioredis 5 (the user's options win): TCP keep-alive after
 * 30 s idle, ioredis 6's default, where ioredis 5's is off, so a blocked `XREADGROUP` on a
 * half-open socket is found by the OS as it would be with the application's ioredis 6.
 */
const BUNDLED_READER_DEFAULTS: RedisOptions = { keepAlive: 30_000 };

/**
 * Cluster defaults of the dedicated roles (`reader`, `subscriber`; the user's `clusterOptions`
 * win). ioredis connects to cluster nodes lazily, on the first command routed there, but its
 * ready check sends `CLUSTER INFO` to a random node, which leaves a second idle connection
 * open on about two readers out of three. Without it a reader holds exactly one connection: to
 * the node serving its shard's slot (MOVED/ASK, TRYAGAIN, CLUSTERDOWN and failovers are still
 * handled by the client, which re-reads the slot map and reconnects where the slot went).
 */
const DEDICATED_CLUSTER_OPTIONS: ClusterOptions = { enableReadyCheck: false };

/**
 * Creates a connection from the `redis` option: a URL (`redis://`, `rediss://`,
 * `redis+cluster://h1:p1,h2:p2`, `rediss+cluster://…`), ioredis options, or
 * `{ cluster: nodes, clusterOptions? }`. Returns a `Redis` or a `Cluster` client. Every call
 * creates a new connection; `reader` connections are therefore never shared.
 *
 * @throws RedisConnectionOptionsError for malformed input, and for `keyPrefix` (every key comes
 *   from the coordinator, with its `KEY_PREFIX`; a client-side prefix would write elsewhere).
 */
export function createRedisConnection(
  options: RedisConnectionOptions,
  role: RedisConnectionRole,
  extras: CreateRedisConnectionExtras = {},
): RedisConnection {
  // (a `'direct'` reader that cannot be direct is built here too: see createReaderConnection)
  const bundled = role === 'reader' && extras.readerClient !== 'application';
  const roleOptions: RedisOptions = {
    ...(role === 'reader' ? READER_OPTIONS : {}),
    ...(role === 'reader' && !bundled ? { protocol: 2, replyMapping: 'legacy' as const } : {}),
    ...(extras.connectionName === undefined ? {} : { connectionName: extras.connectionName }),
    ...(extras.lazyConnect === undefined ? {} : { lazyConnect: extras.lazyConnect }),
    ...(extras.maxRetriesPerRequest === undefined
      ? {}
      : { maxRetriesPerRequest: extras.maxRetriesPerRequest }),
  };
  const clusterDefaults = role === 'command' ? {} : DEDICATED_CLUSTER_OPTIONS;
  const client = bundled ? READER_CLIENT : APPLICATION_CLIENT;
  const defaults = bundled ? BUNDLED_READER_DEFAULTS : {};
  const connection = build(options, { defaults, role: roleOptions }, clusterDefaults, client);
  attachErrorLogging(connection, role, extras.logger, extras.errorLog);
  return connection;
}

/** Options around the user's: `defaults` under them, `role` over them. */
interface LayeredOptions {
  readonly defaults: RedisOptions;
  readonly role: RedisOptions;
}

function build(
  options: RedisConnectionOptions,
  layers: LayeredOptions,
  clusterDefaults: ClusterOptions,
  client: RedisClientClasses,
): RedisConnection {
  const roleOptions = layers.role;
  if (typeof options === 'string') {
    return fromUrl(options.trim(), layers, clusterDefaults, client);
  }
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new RedisConnectionOptionsError(`got ${describe(options)}`);
  }
  if ('cluster' in options) {
    const nodes = parseNodes(options.cluster);
    const clusterOptions: ClusterOptions = options.clusterOptions ?? {};
    rejectKeyPrefix(clusterOptions.keyPrefix ?? clusterOptions.redisOptions?.keyPrefix);
    return new client.Cluster(nodes, {
      ...clusterDefaults,
      ...clusterOptions,
      ...(roleOptions.lazyConnect === undefined ? {} : { lazyConnect: roleOptions.lazyConnect }),
      redisOptions: forClient(
        { ...layers.defaults, ...clusterOptions.redisOptions, ...roleOptions },
        client,
      ),
    });
  }
  rejectKeyPrefix(options.keyPrefix);
  return new client.Redis(forClient({ ...layers.defaults, ...options, ...roleOptions }, client));
}

/** `options` without what `client` does not take (`protocol` for a RESP2-only client). */
function forClient(options: RedisOptions, client: RedisClientClasses): RedisOptions {
  if (!client.resp2Only || !('protocol' in options)) return options;
  const { protocol: _resp2Only, ...rest } = options;
  return rest;
}

function fromUrl(
  url: string,
  layers: LayeredOptions,
  clusterDefaults: ClusterOptions,
  client: RedisClientClasses,
): RedisConnection {
  const roleOptions = layers.role;
  const scheme = redisUrlScheme(url);
  if (scheme === 'redis+cluster' || scheme === 'rediss+cluster') {
    const redisOptions = { ...layers.defaults, ...roleOptions };
    return fromClusterUrl(url, scheme === 'rediss+cluster', redisOptions, clusterDefaults, client);
  }
  if (scheme === undefined) {
    throw new RedisConnectionOptionsError(
      `unsupported URL scheme in ${JSON.stringify(redact(url))} (use redis://, rediss:// or redis+cluster://)`,
    );
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new RedisConnectionOptionsError(`malformed URL ${JSON.stringify(redact(url))}`);
  }
  if (parsed.hostname === '') {
    throw new RedisConnectionOptionsError(`no host in ${JSON.stringify(redact(url))}`);
  }
  const db = parsed.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) {
    throw new RedisConnectionOptionsError(
      `the path of ${JSON.stringify(redact(url))} must be a database number`,
    );
  }
  if (parsed.searchParams.has('keyPrefix')) rejectKeyPrefix(parsed.searchParams.get('keyPrefix'));
  // ioredis turns TLS on only for a literal "rediss://": give it the scheme in lower case
  return new client.Redis(`${scheme}${afterScheme(url, parsed, roleOptions)}`, {
    ...layers.defaults,
    ...roleOptions,
  });
}

/**
 * `url` from its `://` on, without the query parameters `roleOptions` sets. ioredis lets a URL's query win
 * over the options passed beside it (it fills options from the URL first), so
 * `?maxRetriesPerRequest=20` or `?autoResendUnfulfilledCommands=true` would undo what the role
 * requires; the role's options win here as they do over an options object. Defaults passed with
 * the role options (`keepAlive`) are not role options: the URL may still set them.
 */
function afterScheme(url: string, parsed: URL, roleOptions: RedisOptions): string {
  const keys = Object.keys(roleOptions).filter((key) => parsed.searchParams.has(key));
  if (keys.length === 0) return url.slice(url.indexOf('://'));
  for (const key of keys) parsed.searchParams.delete(key);
  return parsed.href.slice(parsed.href.indexOf('://'));
}

function fromClusterUrl(
  url: string,
  tls: boolean,
  roleOptions: RedisOptions,
  clusterDefaults: ClusterOptions,
  client: RedisClientClasses,
): Cluster {
  const rest = url.slice(url.indexOf('://') + 3);
  const match = /^(?:([^@/]*)@)?([^/?#]+)\/?(?:[?#].*)?$/.exec(rest);
  if (!match) {
    throw new RedisConnectionOptionsError(
      `malformed cluster URL ${JSON.stringify(redact(url))}; expected redis+cluster://host1:port1,host2:port2`,
    );
  }
  const [, userInfo, hostList = ''] = match;
  const nodes = parseNodes(hostList.split(','));
  const redisOptions: RedisOptions = { ...roleOptions };
  if (userInfo !== undefined && userInfo !== '') {
    const colon = userInfo.indexOf(':');
    const user = decodeURIComponent(colon < 0 ? '' : userInfo.slice(0, colon));
    const password = decodeURIComponent(colon < 0 ? userInfo : userInfo.slice(colon + 1));
    if (user !== '') redisOptions.username = user;
    if (password !== '') redisOptions.password = password;
  }
  if (tls) redisOptions.tls = {};
  return new client.Cluster(nodes, {
    ...clusterDefaults,
    redisOptions,
    ...(roleOptions.lazyConnect === undefined ? {} : { lazyConnect: roleOptions.lazyConnect }),
  });
}

function parseNodes(nodes: unknown): RedisClusterNode[] {
  if (!Array.isArray(nodes) || nodes.length === 0) {
    throw new RedisConnectionOptionsError('the cluster node list is empty');
  }
  return nodes.map((node: unknown, index) => {
    if (typeof node === 'string') return parseHostPort(node.trim(), index);
    if (typeof node === 'object' && node !== null) {
      const { host, port } = node as { host?: unknown; port?: unknown };
      if (typeof host === 'string' && host !== '' && isPort(port)) return { host, port };
    }
    throw new RedisConnectionOptionsError(
      `cluster node #${index} is ${describe(node)}; expected "host:port" or { host, port }`,
    );
  });
}

function parseHostPort(text: string, index: number): RedisClusterNode {
  const match = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(text);
  const port = Number(match?.[2]);
  if (!match?.[1] || !isPort(port)) {
    throw new RedisConnectionOptionsError(
      `cluster node #${index} ${JSON.stringify(text)} is not "host:port"`,
    );
  }
  return { host: match[1].replace(/^\[(.*)\]$/, '$1'), port };
}

function isPort(port: unknown): port is number {
  return typeof port === 'number' && Number.isInteger(port) && port > 0 && port < 65536;
}

function rejectKeyPrefix(keyPrefix: string | null | undefined): void {
  if (keyPrefix !== undefined && keyPrefix !== null && keyPrefix !== '') {
    throw new RedisConnectionOptionsError(
      `keyPrefix ${JSON.stringify(keyPrefix)} is not supported: every key comes from the ` +
        'coordinator with its KEY_PREFIX; set KEY_PREFIX on the coordinator instead',
    );
  }
}

/**
 * Whether the connection errors logged under it are quiet (at debug level): a warning for the
 * first error after a `ready`, debug for the repeats. One per connection by default; shard
 * readers share one per application (`errorLog`), since a direct reader connection is replaced
 * after every failed call and each new one would warn again.
 */
export interface ConnectionErrorLog {
  quiet: boolean;
}

/**
 * Logs the errors `connection` emits (and keeps them from crashing the process): the first after
 * a `ready` (of any connection sharing `log`) as a warning, repeats at debug level.
 */
export function attachErrorLogging(
  connection: RedisConnection | DirectReaderClient,
  role: RedisConnectionRole,
  logger: DataPlaneLogger | undefined,
  log: ConnectionErrorLog = { quiet: false },
): void {
  connection.on('ready', () => {
    log.quiet = false;
  });
  connection.on('error', (error: unknown) => {
    const text = `Redis ${role} connection error: ${error instanceof Error ? error.message : String(error)}`;
    if (!log.quiet) logger?.warn(text);
    else logger?.debug?.(text);
    log.quiet = true;
  });
}

function redact(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//***@');
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'object') return 'an object';
  if (typeof value === 'function') return 'a function';
  return `${typeof value} ${String(value as number | boolean | bigint | symbol | undefined)}`;
}
