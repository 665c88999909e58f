import { describe, expect, it } from 'vitest';
import { closeConnection } from './close-connection.js';
import type { RedisConnection } from './redis-connection.types.js';

/** A stand-in connection whose `QUIT` never answers (a dead server, or a stranded client). */
function silentConnection(status: string): { connection: RedisConnection; calls: string[] } {
  const calls: string[] = [];
  const connection = {
    status,
    quit: () => {
      calls.push('quit');
      return new Promise(() => undefined);
    },
    disconnect: () => {
      calls.push('disconnect');
    },
    emit: (event: string) => {
      calls.push(event);
      return true;
    },
  } as unknown as RedisConnection;
  return { connection, calls };
}

describe('closeConnection', () => {
  it('only disconnects a connection that is not ready (a QUIT would wait for a reconnect that may never come)', async () => {
    for (const status of ['reconnecting', 'connecting', 'close', 'end']) {
      const { connection, calls } = silentConnection(status);
      const started = performance.now();
      await closeConnection(connection, 10_000);
      expect(performance.now() - started).toBeLessThan(50);
      expect(calls).toEqual(['disconnect', 'rsc:closed']);
    }
  });

  it('sends QUIT to a ready connection and disconnects it when QUIT does not answer in time', async () => {
    const { connection, calls } = silentConnection('ready');
    const started = performance.now();
    await closeConnection(connection, 50);
    expect(performance.now() - started).toBeGreaterThanOrEqual(45);
    expect(performance.now() - started).toBeLessThan(1000);
    expect(calls).toEqual(['quit', 'disconnect', 'rsc:closed']);
  });
});
