import { describe, expect, it } from 'vitest';
import { ReaderConnectionClosedError } from '../errors/data-plane/reader-connection-closed.error.js';
import { ReaderStoppedError } from '../errors/data-plane/reader-stopped.error.js';
import { ReaderWatchdogError } from '../errors/data-plane/reader-watchdog.error.js';
import type { RedisConnection } from '../redis/redis-connection.types.js';
import { ReaderConnection } from './reader-connection.js';

interface FakeState {
  dropped: boolean;
  /** What ioredis would report as `status`. */
  status: string;
  /** Emits one of the connection's events (as ioredis would). */
  emit(event: string): void;
}

/** A stand-in connection: only what ReaderConnection touches. */
function fakeConnections(): {
  factory: () => RedisConnection;
  created: FakeState[];
} {
  const created: FakeState[] = [];
  return {
    created,
    factory: () => {
      const listeners = new Map<string, Array<() => void>>();
      const state: FakeState = {
        dropped: false,
        status: 'ready',
        emit: (event) => {
          for (const listener of listeners.get(event) ?? []) listener();
        },
      };
      created.push(state);
      return {
        get status() {
          return state.status;
        },
        on: (event: string, listener: () => void) => {
          listeners.set(event, [...(listeners.get(event) ?? []), listener]);
        },
        quit: () => Promise.resolve('OK'),
        disconnect: () => {
          state.dropped = true;
        },
        emit: (event: string) => {
          state.emit(event);
          return true;
        },
      } as unknown as RedisConnection;
    },
  };
}

const never = (): Promise<never> => new Promise<never>(() => undefined);
const soon = <T>(value: T): Promise<T> =>
  new Promise((resolve) => setTimeout(() => resolve(value), 1));

describe('ReaderConnection', () => {
  it('abandons a call that does not answer within its own deadline, even after many quick calls, and replaces the connection', async () => {
    const { factory, created } = fakeConnections();
    const connection = new ReaderConnection(factory, () => undefined);
    // many quick calls with a long deadline arm one lazy timer…
    for (let i = 0; i < 50; i++) expect(await connection.run(() => soon(i), 5_000)).toBe(i);
    // …which must not delay a hung call with a short deadline
    const started = performance.now();
    const hung = connection.run(never, 100).catch((e: unknown) => e);
    const error = await hung;
    const took = performance.now() - started;
    expect(error).toBeInstanceOf(ReaderWatchdogError);
    expect(took).toBeGreaterThanOrEqual(95);
    expect(took).toBeLessThan(1_000);
    expect(created).toHaveLength(1);
    expect(created[0]?.dropped).toBe(true);
    expect(await connection.run(() => soon('next'), 1_000)).toBe('next');
    expect(created).toHaveLength(2);
    await connection.close();
  });

  it('re-arms for a call still in flight when the timer fires for an earlier deadline', async () => {
    const { factory } = fakeConnections();
    const connection = new ReaderConnection(factory, () => undefined);
    const quick = connection.run(() => soon('quick'), 50); // arms the timer at +50 ms
    const slow = connection.run(
      () => new Promise<string>((resolve) => setTimeout(() => resolve('slow'), 150)),
      400,
    );
    expect(await quick).toBe('quick');
    // the timer fires at +50 ms with `slow` in flight: it must neither end it nor forget it
    expect(await slow).toBe('slow');
    const started = performance.now();
    await expect(connection.run(never, 80)).rejects.toBeInstanceOf(ReaderWatchdogError);
    expect(performance.now() - started).toBeLessThan(1_000);
    await connection.close();
  });

  it('ends abortable calls at once when the signal aborts, and only those', async () => {
    const { factory } = fakeConnections();
    const abort = new AbortController();
    const connection = new ReaderConnection(factory, () => undefined, abort.signal);
    const blocked = connection.run(never, 60_000, true).catch((e: unknown) => e);
    let answered = false;
    const short = connection
      .run(() => new Promise<string>((resolve) => setTimeout(() => resolve('done'), 30)), 5_000)
      .then((v) => {
        answered = true;
        return v;
      });
    const started = performance.now();
    abort.abort();
    expect(await blocked).toBeInstanceOf(ReaderStoppedError);
    expect(performance.now() - started).toBeLessThan(100);
    expect(await short).toBe('done');
    expect(answered).toBe(true);
    await expect(connection.run(never, 60_000, true)).rejects.toBeInstanceOf(ReaderStoppedError);
    await connection.close();
  });

  it('ends every call in flight on a connection at once when that connection closes, and only those', async () => {
    const { factory, created } = fakeConnections();
    const connection = new ReaderConnection(factory, () => undefined);
    const blocked = connection.run(never, 60_000, true).catch((e: unknown) => e);
    const short = connection.run(never, 60_000).catch((e: unknown) => e);
    const started = performance.now();
    // as ioredis does: the status is `reconnecting` by the time `close` is emitted
    (created[0] as FakeState).status = 'reconnecting';
    created[0]?.emit('close');
    expect(await blocked).toBeInstanceOf(ReaderConnectionClosedError);
    expect(await short).toBeInstanceOf(ReaderConnectionClosedError);
    expect(performance.now() - started).toBeLessThan(100);
    // kept: ioredis is reconnecting it already (a disconnect now would strand it)
    expect(created[0]?.dropped).toBe(false);
    (created[0] as FakeState).status = 'ready';
    const next = connection.run(() => soon('next'), 5_000);
    expect(created).toHaveLength(1);
    expect(await next).toBe('next');
    // after a replacement, a late event of the old connection does not touch the new one's calls
    const blockedAgain = connection.run(never, 50).catch((e: unknown) => e);
    expect(await blockedAgain).toBeInstanceOf(ReaderWatchdogError);
    expect(created[0]?.dropped).toBe(true);
    const onNew = connection.run(() => soon('new'), 5_000);
    expect(created).toHaveLength(2);
    created[0]?.emit('close');
    expect(await onNew).toBe('new');
    expect(created[1]?.dropped).toBe(false);
    await connection.close();
  });

  it('keeps a connection that ioredis is reconnecting when asked to drop it (a disconnect would strand it)', async () => {
    const { factory, created } = fakeConnections();
    const connection = new ReaderConnection(factory, () => undefined);
    expect(await connection.run(() => soon(1), 5_000)).toBe(1);
    const first = created[0] as FakeState;
    first.status = 'reconnecting';
    connection.drop();
    expect(first.dropped).toBe(false);
    first.status = 'ready';
    expect(await connection.run(() => soon(2), 5_000)).toBe(2);
    expect(created).toHaveLength(1);
    connection.drop();
    expect(first.dropped).toBe(true);
    expect(await connection.run(() => soon(3), 5_000)).toBe(3);
    expect(created).toHaveLength(2);
    await connection.close();
  });
});
