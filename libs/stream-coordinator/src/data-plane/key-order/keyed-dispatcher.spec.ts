import { describe, expect, it } from 'vitest';
import { FencedError } from '../../errors/data-plane/fenced.error.js';
import type { MessageRunner, Outcome } from '../message-runner.js';
import type { RawStreamEntry } from '../raw-entry.types.js';
import { KeyedDispatcher } from './keyed-dispatcher.js';

/** A raw entry `id` of routing key `key`. */
function entry(id: string, key: string): RawStreamEntry {
  return [Buffer.from(id), [Buffer.from('key'), Buffer.from(key)]] as RawStreamEntry;
}

/** A runner whose calls the test settles by hand: `calls` in start order. */
function manualRunner(): {
  runner: MessageRunner;
  calls: Array<{ id: string; resolve: (o: Outcome) => void; reject: (e: unknown) => void }>;
} {
  const calls: Array<{ id: string; resolve: (o: Outcome) => void; reject: (e: unknown) => void }> =
    [];
  const runner = {
    run: (id: string) =>
      new Promise<Outcome>((resolve, reject) => void calls.push({ id, resolve, reject })),
  } as unknown as MessageRunner;
  return { runner, calls };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('KeyedDispatcher', () => {
  it('an entry that hits the fence aborts the dispatch: nothing more starts, nothing is acked', async () => {
    const { runner, calls } = manualRunner();
    const dispatch = new AbortController();
    const keyed = new KeyedDispatcher(runner, 1, 10, dispatch);
    keyed.offer([entry('1-0', 'a'), entry('2-0', 'b'), entry('3-0', 'c')]);
    expect(calls.map((c) => c.id)).toEqual(['1-0']); // one slot
    calls[0]?.reject(new FencedError('s', 'g', 'A', '2:B'));
    await tick();
    expect(dispatch.signal.aborted).toBe(true);
    expect(calls.map((c) => c.id)).toEqual(['1-0']); // 2-0 never started
    expect(keyed.takeAcks()).toEqual([]);
    expect(() => keyed.throwIfFailed()).toThrow(FencedError);
    await keyed.drain();
  });

  it('lose() aborts the dispatch before in-flight entries settle; their acks are dropped', async () => {
    const { runner, calls } = manualRunner();
    const dispatch = new AbortController();
    const keyed = new KeyedDispatcher(runner, 1, 10, dispatch);
    keyed.offer([entry('1-0', 'a'), entry('2-0', 'b')]);
    keyed.lose();
    expect(dispatch.signal.aborted).toBe(true);
    calls[0]?.resolve('ack');
    await tick();
    expect(calls.map((c) => c.id)).toEqual(['1-0']);
    expect(keyed.takeAcks()).toEqual([]);
    await keyed.drain();
    // a reset (before a claim pass) keeps it lost
    await keyed.reset();
    keyed.offer([entry('2-0', 'b')]);
    expect(calls.map((c) => c.id)).toEqual(['1-0']);
  });

  it('reset() forgets the orphan-check high-water mark', async () => {
    const { runner, calls } = manualRunner();
    const keyed = new KeyedDispatcher(runner, 4, 10, new AbortController());
    keyed.offer([entry('5-0', 'a')]);
    expect(keyed.seenUpTo).toBe('5-0');
    calls[0]?.resolve('ack');
    await tick();
    await keyed.reset();
    expect(keyed.seenUpTo).toBeUndefined();
    keyed.offer([entry('3-0', 'a')]);
    expect(keyed.seenUpTo).toBe('3-0');
  });
});
