import { isIP } from 'node:net';

/**
 * Which proxies' `X-Forwarded-*` headers the HTTP server believes (Fastify's `trustProxy`):
 * none (`false`), every one (`true`), the last N hops, or the listed addresses and CIDR ranges.
 */
export type TrustProxy = boolean | number | readonly string[];

/** Most proxy hops TRUST_PROXY may name. */
const MAX_HOPS = 100;

/** An IPv4 or IPv6 address, optionally with a prefix length fitting its family. */
function isAddressOrRange(entry: string): boolean {
  const [address = '', prefix, ...rest] = entry.split('/');
  const family = isIP(address);
  if (family === 0 || rest.length > 0) return false;
  if (prefix === undefined) return true;
  return /^\d{1,3}$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128);
}

/**
 * Parses TRUST_PROXY: empty or `false` (the default), `true`, a hop count (1-100), or a
 * comma-separated list of proxy addresses and CIDR ranges. Returns `null` for anything else.
 */
export function parseTrustProxy(raw: string | undefined): TrustProxy | null {
  const value = (raw ?? '').trim();
  if (value === '' || value === 'false') return false;
  if (value === 'true') return true;
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    return hops >= 1 && hops <= MAX_HOPS ? hops : null;
  }
  const entries = value.split(',').map((e) => e.trim());
  return entries.every(isAddressOrRange) ? entries : null;
}

/** The HTTP server's form of {@link TrustProxy} (a hop count as proxy-addr's predicate). */
export function fastifyTrustProxy(
  trust: TrustProxy,
): boolean | string[] | ((address: string, hop: number) => boolean) {
  if (typeof trust === 'number') return (_address, hop) => hop < trust;
  return typeof trust === 'boolean' ? trust : [...trust];
}
