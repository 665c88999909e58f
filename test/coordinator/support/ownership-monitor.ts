import type { ShardRef } from './shard-set.js';

/** What the monitor knows about one member at one instant. */
export interface MemberView {
  /** Shards the member holds (may process, or is still draining) in its own view. */
  readonly held: ReadonlySet<ShardRef>;
  /** Bumped on every change of `held`: equal counters at two instants = no change between them. */
  readonly changes: number;
  /** True between an acknowledged leave and the next join request. */
  readonly left: boolean;
}

/**
 * The members' own view of shard ownership, kept in step synchronously by every simulated member
 * (they all run in the test process, so each update is one atomic step). Records a violation the
 * instant two members both hold the same shard.
 */
export class OwnershipMonitor {
  private readonly holders = new Map<ShardRef, string>();
  private readonly views = new Map<string, MemberView>();
  /** Every violation seen, with the time it happened. */
  readonly violations: string[] = [];
  /** Number of updates applied (how much the run exercised the check). */
  updates = 0;

  /** Replaces `memberId`'s held set; records a violation when a shard is held by another member. */
  update(memberId: string, held: ReadonlySet<ShardRef>, left = false): void {
    this.updates++;
    const previous = this.views.get(memberId);
    const copy = new Set(held);
    for (const ref of previous?.held ?? []) {
      if (!copy.has(ref) && this.holders.get(ref) === memberId) this.holders.delete(ref);
    }
    for (const ref of copy) {
      const other = this.holders.get(ref);
      if (other !== undefined && other !== memberId) {
        this.violations.push(
          `${new Date().toISOString()} ${ref} held by ${memberId} while ${other} still holds it`,
        );
      }
      this.holders.set(ref, memberId);
    }
    const changed =
      previous === undefined || previous.left !== left || !sameSet(previous.held, copy);
    this.views.set(memberId, {
      held: copy,
      changes: (previous?.changes ?? 0) + (changed ? 1 : 0),
      left,
    });
  }

  /** A consistent copy of every member's view right now. */
  snapshot(): ReadonlyMap<string, MemberView> {
    return new Map(this.views);
  }
}

function sameSet(a: ReadonlySet<string>, b: ReadonlySet<string>): boolean {
  if (a.size !== b.size) return false;
  for (const x of a) if (!b.has(x)) return false;
  return true;
}
