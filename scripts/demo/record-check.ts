import { existsSync, readFileSync } from 'node:fs';

/** What the handled-message records say about a run. */
export interface RecordSummary {
  readonly records: number;
  readonly distinct: number;
  readonly duplicates: number;
  /** Keys whose first handlings of each sequence number were not in order. */
  readonly orderViolations: number;
  readonly missing: number;
}

interface Line {
  k: string;
  q: number;
  t0: number;
}

/**
 * Reads the workers' JSON-lines records and checks them against what was sent: every message
 * handled at least once, and per key the first handling of each sequence number in order.
 */
export function checkRecords(
  files: readonly string[],
  sent: ReadonlyMap<string, number>,
): RecordSummary {
  const lines: Line[] = [];
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const raw of readFileSync(file, 'utf8').split('\n')) {
      if (raw.trim() === '') continue;
      // the worker writes ack lines (`{"a": [ids], …}`) to the same file: only handled lines count
      const line = JSON.parse(raw) as Partial<Line>;
      if (typeof line.k === 'string' && typeof line.q === 'number') lines.push(line as Line);
    }
  }
  lines.sort((a, b) => a.t0 - b.t0);
  const firstSeen = new Map<string, number[]>();
  const seen = new Set<string>();
  let duplicates = 0;
  for (const l of lines) {
    const id = `${l.k}#${l.q}`;
    if (seen.has(id)) {
      duplicates++;
      continue;
    }
    seen.add(id);
    const list = firstSeen.get(l.k);
    if (list) list.push(l.q);
    else firstSeen.set(l.k, [l.q]);
  }
  let orderViolations = 0;
  for (const list of firstSeen.values()) {
    for (let i = 1; i < list.length; i++) {
      if ((list[i] as number) < (list[i - 1] as number)) {
        orderViolations++;
        break;
      }
    }
  }
  let missing = 0;
  for (const [key, count] of sent) {
    for (let q = 0; q < count; q++) if (!seen.has(`${key}#${q}`)) missing++;
  }
  return { records: lines.length, distinct: seen.size, duplicates, orderViolations, missing };
}
