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

/** A TCP port that is free on `host` at the moment of the call (the OS picks it). */
export function freePort(host = '127.0.0.1'): Promise<number> {
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
 * cluster bus port, `port + 10000` by default). Picked at random in `[20000, 65535 - offset]`.
 */
export async function freePortPair(offset = 10_000, host = '127.0.0.1'): Promise<number> {
  const low = 20_000;
  const high = 65_535 - offset;
  for (let attempt = 0; attempt < 200; attempt++) {
    const port = low + Math.floor(Math.random() * (high - low));
    if ((await isPortFree(port, host)) && (await isPortFree(port + offset, host))) return port;
  }
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
