const DELETED: unique symbol = Symbol('deleted');

/**
 * A copy-on-write view over a base map: writes go to an overlay, reads see the overlay first, the
 * base is untouched until {@link OverlayMap.commit}. This is how a request's changes stay
 * invisible (and trivially discarded) until they are persisted.
 */
export class OverlayMap<K, V> {
  private readonly changes = new Map<K, V | typeof DELETED>();

  constructor(private readonly base: Map<K, V>) {}

  get(key: K): V | undefined {
    if (this.changes.has(key)) {
      const v = this.changes.get(key);
      return v === DELETED ? undefined : (v as V);
    }
    return this.base.get(key);
  }

  /** The value the base held before this overlay. */
  getBase(key: K): V | undefined {
    return this.base.get(key);
  }

  has(key: K): boolean {
    return this.get(key) !== undefined;
  }

  set(key: K, value: V): void {
    this.changes.set(key, value);
  }

  delete(key: K): void {
    if (this.base.has(key)) this.changes.set(key, DELETED);
    else this.changes.delete(key);
  }

  /** Keys written in this overlay (set or deleted). */
  changedKeys(): IterableIterator<K> {
    return this.changes.keys();
  }

  get dirty(): boolean {
    return this.changes.size > 0;
  }

  /** Every live entry: base entries not overridden, then overlay entries. */
  *entries(): Generator<[K, V]> {
    for (const [k, v] of this.base) {
      if (!this.changes.has(k)) yield [k, v];
    }
    for (const [k, v] of this.changes) {
      if (v !== DELETED) yield [k, v as V];
    }
  }

  /** Number of live entries. */
  get size(): number {
    let n = this.base.size;
    for (const [k, v] of this.changes) {
      const inBase = this.base.has(k);
      if (v === DELETED) {
        if (inBase) n--;
      } else if (!inBase) n++;
    }
    return n;
  }

  /** Applies the overlay to the base and clears it. */
  commit(): void {
    for (const [k, v] of this.changes) {
      if (v === DELETED) this.base.delete(k);
      else this.base.set(k, v as V);
    }
    this.changes.clear();
  }
}
