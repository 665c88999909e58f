import type { GroupCoordinatorObserver } from '../core/group-coordinator-observer.js';
import type { GroupTransaction } from '../core/group-transaction.js';

/** Minimal logger (Nest's `Logger` fits). */
interface FallbackLogger {
  warn(message: string): void;
}

/**
 * Warns for every committed change whose target was computed with the default assignor because
 * this replica does not have the one the group's members name (the `ASSIGNOR_FALLBACK` event),
 * then passes every notification on to `next` (the metrics).
 */
export class AssignorFallbackLog implements GroupCoordinatorObserver {
  constructor(
    private readonly next: GroupCoordinatorObserver,
    private readonly logger: FallbackLogger,
  ) {}

  onCommitted(groupId: string, txn: GroupTransaction): void {
    for (const e of txn.events) {
      if (e.type !== 'ASSIGNOR_FALLBACK') continue;
      const { requested, used, membersNaming } = e.data as {
        requested: string;
        used: string;
        membersNaming: number;
      };
      this.logger.warn(
        `group ${groupId}: assignor "${requested}" is not configured on this replica; used "${used}" ` +
          `for assignment epoch ${String(e.data.assignmentEpoch)} (${membersNaming} member(s) name it). ` +
          'Register it on every replica, or have those members name a configured assignor.',
      );
    }
    this.next.onCommitted?.(groupId, txn);
  }

  onConflict(groupId: string): void {
    this.next.onConflict?.(groupId);
  }
}
