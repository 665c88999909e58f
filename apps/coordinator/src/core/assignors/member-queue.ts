import { NumberHeap } from './number-heap.js';

/**
 * A priority queue of member indices whose priorities change: {@link set} re-keys a member in
 * O(log n) by pushing a fresh heap entry; entries that no longer match the member's live key are
 * skipped when they surface. Each member is in the queue at most once (logically).
 */
export class MemberQueue {
  private readonly heap = new NumberHeap();
  /** The key of each member's live entry; NaN when the member is not queued. */
  private readonly live: number[];

  constructor(memberCount: number) {
    this.live = Array.from({ length: memberCount }, () => Number.NaN);
  }

  /** Queues `member` with `key` (smallest first), replacing its previous key. */
  set(member: number, key: number): void {
    this.live[member] = key;
    this.heap.push(key, member);
  }

  /** Removes `member` from the queue (no-op when absent). */
  delete(member: number): void {
    this.live[member] = Number.NaN;
  }

  /** The member with the smallest key, without removing it; -1 when empty. */
  peek(): number {
    for (;;) {
      const key = this.heap.peekKey();
      const member = this.heap.peekValue();
      if (key === undefined || member === undefined) return -1;
      if (this.live[member] === key) return member;
      this.heap.pop();
    }
  }

  /** Removes and returns the member with the smallest key; -1 when empty. */
  pop(): number {
    const member = this.peek();
    if (member >= 0) {
      this.heap.pop();
      this.live[member] = Number.NaN;
    }
    return member;
  }
}
