import { checkHandled } from '../../test/support/handled-records.js';

/** What the handled-message records say about a run. */
export interface RecordSummary {
  readonly records: number;
  readonly distinct: number;
  readonly duplicates: number;
  /** Keys whose first handlings of each sequence number were not in order. */
  readonly orderViolations: number;
  readonly missing: number;
}

/**
 * Reads the workers' JSON-lines records and checks them against what was sent: every message
 * handled at least once, and per key the first handling of each sequence number in order. Ack
 * lines in the same files are neither messages nor redeliveries (the records reader skips them).
 */
export function checkRecords(
  files: readonly string[],
  sent: ReadonlyMap<string, number>,
): RecordSummary {
  const check = checkHandled(files, sent);
  return {
    records: check.records,
    distinct: check.distinct,
    duplicates: check.duplicates,
    orderViolations: check.orderViolations.length,
    missing: check.missing,
  };
}
