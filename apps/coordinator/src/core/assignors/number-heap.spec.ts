import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MemberQueue } from './member-queue.js';
import { heapKey, NumberHeap, RANK_SPACE } from './number-heap.js';

describe('NumberHeap', () => {
  it('pops keys in ascending order', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: -1000, max: 1000 })), (keys) => {
        const heap = new NumberHeap();
        keys.forEach((k, i) => heap.push(k, i));
        const popped: number[] = [];
        while (heap.size > 0) {
          const key = heap.peekKey() as number;
          const value = heap.pop() as number;
          expect(keys[value]).toBe(key);
          popped.push(key);
        }
        expect(popped).toEqual([...keys].sort((a, b) => a - b));
        expect(heap.pop()).toBeUndefined();
      }),
    );
  });

  it('heapKey orders by primary, then rank', () => {
    expect(heapKey(1, RANK_SPACE - 1)).toBeLessThan(heapKey(2, 0));
    expect(heapKey(-2, 5)).toBeLessThan(heapKey(-1, 0));
    expect(heapKey(3, 1)).toBeLessThan(heapKey(3, 2));
  });
});

describe('MemberQueue', () => {
  it('pops each member once with its latest key', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 50 }))),
        (updates) => {
          const queue = new MemberQueue(10);
          const latest = new Map<number, number>();
          for (const [m, k] of updates) {
            queue.set(m, k);
            latest.set(m, k);
          }
          const order: number[] = [];
          for (let m = queue.pop(); m >= 0; m = queue.pop()) order.push(m);
          const keys = order.map((m) => latest.get(m) as number);
          expect(keys).toEqual([...keys].sort((a, b) => a - b));
          expect(order.sort((a, b) => a - b)).toEqual([...latest.keys()].sort((a, b) => a - b));
        },
      ),
    );
  });

  it('peek skips deleted members', () => {
    const queue = new MemberQueue(3);
    queue.set(0, 1);
    queue.set(1, 2);
    queue.delete(0);
    expect(queue.peek()).toBe(1);
    expect(queue.pop()).toBe(1);
    expect(queue.pop()).toBe(-1);
  });
});
