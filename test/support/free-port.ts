import { readFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { waitFor } from './wait.js';

/**
 * Whether `port` can be bound on `host` right now (it is free at the moment of the check; another
 * process may take it afterwards, so callers that start a server on it retry on a bind failure).
 */
export function isPortFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ port, host, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}

/**
 * The OS's ephemeral port range (`ip_local_port_range`), where it puts the local end of every
 * outgoing connection; Linux's default when it cannot be read.
 */
export function ephemeralPortRange(): { readonly low: number; readonly high: number } {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8')
      .trim()
      .split(/\s+/)
      .map(Number);
    if (Number.isInteger(low) && Number.isInteger(high)) return { low, high } as const;
  } catch {
    // not Linux: fall through to Linux's default
  }
  return { low: 32_768, high: 60_999 };
}

/** Lowest port {@link freePort} picks: above the registered ports most local services use. */
const PICK_LOW = 10_000;

/**
 * Ports this test process was handed recently: two calls in a row, with nothing bound in between
 * (two coordinator replicas' ports, say), must not get the same one.
 */
const handedOut = new Set<number>();

/**
 * A random port in `[low, high)` not handed out recently that is free on `host` and on every
 * address right now (a child may bind `0.0.0.0`), or `null` after `attempts`.
 */
async function randomFreePort(
  low: number,
  high: number,
  host: string,
  attempts: number,
  alsoFree: (port: number) => Promise<boolean> = async () => true,
): Promise<number | null> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if (handedOut.has(port)) continue;
    if (!(await isPortFree(port, host)) || !(await isPortFree(port, '0.0.0.0'))) continue;
    if (!(await alsoFree(port))) continue;
    if (handedOut.size >= 1_000) handedOut.clear();
    handedOut.add(port);
    return port;
  }
  return null;
}

/**
 * A TCP port that is free on `host` at the moment of the call, picked at random below the OS's
 * ephemeral range. A port the OS hands out for `listen(0)` is an ephemeral one, and any outgoing
 * connection (a test's Redis client, a fetch) may take it as its local end before the server
 * that was meant for it binds; the server then fails with EADDRINUSE (seen in CI: a chaos worker
 * on 0.0.0.0:33427). Below the range only another explicit listener can take it.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  const { low } = ephemeralPortRange();
  if (low - PICK_LOW >= 1_000) {
    const port = await randomFreePort(PICK_LOW, low, host, 200);
    if (port !== null) return port;
  }
  return osPickedPort(host); // no room below the range: fall back to the OS's pick
}

/** A port the OS picks for `listen(0)` (an ephemeral one). */
function osPickedPort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ port: 0, host, exclusive: true }, () => {
      const address = server.address();
      if (address === null || typeof address === 'string') {
        server.close();
        reject(new Error('freePort: the OS returned no TCP address'));
        return;
      }
      server.close(() => resolve(address.port));
    });
  });
}

/**
 * A port `p` such that both `p` and `p + offset` are free (Redis Cluster nodes also listen on the
 * cluster bus port, `port + 10000` by default). Picked at random so that both stay below the
 * ephemeral range when it leaves room, else in `[20000, 65535 - offset]`.
 */
export async function freePortPair(offset = 10_000, host = '127.0.0.1'): Promise<number> {
  const below = ephemeralPortRange().low - offset;
  const [low, high] = below - PICK_LOW >= 1_000 ? [PICK_LOW, below] : [20_000, 65_535 - offset];
  const port = await randomFreePort(low, high, host, 200, (p) => isPortFree(p + offset, host));
  if (port !== null) return port;
  throw new Error(`freePortPair: found no free port p with p+${offset} also free on ${host}`);
}

/**
 * Whether something accepts TCP connections on `host:port` (a connect attempt, bounded by
 * `timeoutMs`; a refused or timed-out connect counts as "not listening").
 */
export function isPortListening(
  port: number,
  host = '127.0.0.1',
  timeoutMs = 1000,
): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host });
    const done = (listening: boolean): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(listening);
    };
    const timer = setTimeout(() => done(false), timeoutMs);
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

/**
 * Resolves once nothing accepts TCP connections on `host:port` (the server behind it has gone),
 * or rejects after `timeoutMs`.
 */
export async function waitForPortClosed(
  port: number,
  host = '127.0.0.1',
  timeoutMs = 10_000,
): Promise<void> {
  await waitFor(async () => !(await isPortListening(port, host)), {
    timeoutMs,
    message: `port ${host}:${port} to stop accepting connections`,
  });
}
