/** The URL schemes {@link createRedisConnection} accepts (compared without case). @internal */
export const REDIS_URL_SCHEMES = ['redis', 'rediss', 'redis+cluster', 'rediss+cluster'] as const;

/** One of {@link REDIS_URL_SCHEMES}. @internal */
export type RedisUrlScheme = (typeof REDIS_URL_SCHEMES)[number];

/**
 * The scheme of `url` in lower case when it is one {@link createRedisConnection} accepts,
 * `undefined` otherwise (another scheme, or no `scheme://` at all).
 *
 * @internal
 */
export function redisUrlScheme(url: string): RedisUrlScheme | undefined {
  const scheme = /^([a-z+]+):\/\//i.exec(url.trim())?.[1]?.toLowerCase();
  return REDIS_URL_SCHEMES.find((known) => known === scheme);
}

/**
 * Whether `url` (surrounding white space ignored) has an accepted scheme and something after
 * `://` without white space: the check option and config validation make before
 * {@link createRedisConnection} parses the URL in full.
 *
 * @internal
 */
export function isRedisUrl(url: string): boolean {
  const trimmed = url.trim();
  return redisUrlScheme(trimmed) !== undefined && /^[^:]+:\/\/\S+$/.test(trimmed);
}
