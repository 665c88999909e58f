import type { GroupTransaction } from './group-transaction.js';

/**
 * Observes what the coordinator does (metrics). All methods optional. Declared here, below both
 * the group coordinator that calls it and the metrics that implement it.
 */
export interface GroupCoordinatorObserver {
  onCommitted?(groupId: string, txn: GroupTransaction): void;
  onConflict?(groupId: string): void;
}
