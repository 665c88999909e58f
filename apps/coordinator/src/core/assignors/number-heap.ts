/**
 * A binary min-heap of `(key, value)` pairs of plain numbers, the priority queue of the built-in
 * assignors. Equal keys pop in no particular order, so callers fold their tie-breaks into the key
 * (see {@link heapKey}). No decrease-key: callers push a fresh entry and skip stale ones on pop.
 */
export class NumberHeap {
  private readonly keys: number[] = [];
  private readonly values: number[] = [];

  /** Number of entries. */
  get size(): number {
    return this.keys.length;
  }

  /** Adds `value` with priority `key` (smallest pops first). */
  push(key: number, value: number): void {
    const keys = this.keys;
    const values = this.values;
    let i = keys.length;
    keys.push(key);
    values.push(value);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const pk = keys[parent] as number;
      if (pk <= key) break;
      keys[i] = pk;
      values[i] = values[parent] as number;
      i = parent;
    }
    keys[i] = key;
    values[i] = value;
  }

  /** The smallest key, or `undefined` when empty. */
  peekKey(): number | undefined {
    return this.keys[0];
  }

  /** The value of the smallest key, or `undefined` when empty. */
  peekValue(): number | undefined {
    return this.values[0];
  }

  /** Removes the smallest entry and returns its value (`undefined` when empty). */
  pop(): number | undefined {
    const keys = this.keys;
    const values = this.values;
    const top = values[0];
    const lastKey = keys.pop();
    const lastValue = values.pop();
    const n = keys.length;
    if (n === 0 || lastKey === undefined || lastValue === undefined) return top;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && (keys[right] as number) < (keys[left] as number) ? right : left;
      const ck = keys[child] as number;
      if (ck >= lastKey) break;
      keys[i] = ck;
      values[i] = values[child] as number;
      i = child;
    }
    keys[i] = lastKey;
    values[i] = lastValue;
    return top;
  }
}

/** Ranks fit below this bound in a {@link heapKey}. */
export const RANK_SPACE = 2 ** 20;

/**
 * Folds a primary priority and a tie-breaking rank (`0 <= rank < 2^20`) into one exact heap key:
 * orders by `primary`, then by `rank`. Exact while `|primary| < 2^32`.
 */
export function heapKey(primary: number, rank: number): number {
  return primary * RANK_SPACE + rank;
}
