import { describe, expect, it } from 'vitest';
import { KeyedOutbox } from './keyed-outbox.js';

/** A deterministic "random" source cycling through `values`. */
function cycle(...values: number[]): () => number {
  let i = 0;
  return () => values[i++ % values.length] as number;
}

describe('KeyedOutbox', () => {
  it('numbers each key 0, 1, 2, … and stops at the limit', () => {
    const outbox = new KeyedOutbox(2, 5, cycle(0.1, 0.5, 0.9, 0.5));
    expect(outbox.generate(10)).toBe(5);
    const batch = outbox.peek(10);
    expect(batch.map((m) => `${m.key}#${m.payload.seq}`)).toEqual([
      'key-0#0',
      'key-1#0',
      'key-0#1',
      'key-1#1',
      'key-0#2',
    ]);
    expect(outbox.generate(1)).toBe(0);
    expect(outbox.done).toBe(false);
    outbox.settle(
      batch,
      batch.map(() => true),
    );
    expect(outbox.done).toBe(true);
    expect(outbox.confirmed).toBe(5);
    expect(outbox.sentPerKey()).toEqual({ 'key-0': 3, 'key-1': 2 });
  });

  it('keeps unconfirmed messages in front, in order, for the next batch', () => {
    const outbox = new KeyedOutbox(1, 0, () => 0);
    outbox.generate(4);
    const first = outbox.peek(3);
    outbox.settle(first, [true, false, false]);
    outbox.generate(1);
    expect(outbox.peek(10).map((m) => m.payload.seq)).toEqual([1, 2, 3, 4]);
    expect(outbox.waiting).toBe(4);
    outbox.settle(outbox.peek(10), [false, false, false, false]);
    expect(outbox.confirmed).toBe(1);
    expect(outbox.done).toBe(false); // no limit: never done
  });
});
