import { existsSync, readFileSync } from 'node:fs';
import type { AckRecord, HandledRecord } from './invariants/invariant-input.types.js';

/** One handled line of the example worker's `RECORD_FILE` (the invariant checker's record). */
export type HandledLine = HandledRecord;

/** One acknowledgement line of `RECORD_FILE` (the worker always writes `t0` and `st`). */
export type AckLine = Required<AckRecord>;

/** What the handled records say about a run, against what was sent. */
export interface HandledCheck {
  readonly records: number;
  /** Distinct (key, seq) handled. */
  readonly distinct: number;
  readonly duplicates: number;
  /** (key, seq) sent but never handled. */
  readonly missing: number;
  readonly missingSample: readonly string[];
  /** Keys whose first handlings of each seq were not in seq order (with the first offending pair). */
  readonly orderViolations: readonly string[];
  /** Handlings of one shard by two members that overlap in time. */
  readonly ownerOverlaps: readonly string[];
  /**
   * Keys whose next seq lives in another shard (a reshard moved the key) and was first handled
   * before the previous seq's ack had even been sent: a child handled before its parent's
   * message of that key was acknowledged.
   */
  readonly handledBeforeParentAck: readonly string[];
  /** Such shard transitions whose earlier message has no ack line (e.g. its member was killed). */
  readonly transitionsWithoutAck: number;
  /** Shard transitions of keys checked against acks. */
  readonly transitions: number;
  /** Shard → members that handled it. */
  readonly handlersByShard: ReadonlyMap<number, ReadonlySet<string>>;
}

/** Reads every handled-message line of the given files (missing files count as empty; ack lines skipped). */
export function readHandled(files: readonly string[]): HandledLine[] {
  return readRecords(files).handled;
}

/** Reads every line of the given files, split into handled messages and ack batches. */
export function readRecords(files: readonly string[]): { handled: HandledLine[]; acks: AckLine[] } {
  const handled: HandledLine[] = [];
  const acks: AckLine[] = [];
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const raw of readFileSync(file, 'utf8').split('\n')) {
      if (raw.trim() === '') continue;
      const line = JSON.parse(raw) as HandledLine | AckLine;
      if ('a' in line) acks.push(line);
      else handled.push(line);
    }
  }
  return { handled, acks };
}

/** Distinct (key, seq) pairs handled so far. */
export function handledCount(files: readonly string[]): number {
  return new Set(readHandled(files).map((l) => `${l.k}#${l.q}`)).size;
}

/**
 * Checks a run: every sent message handled at least once; per key, the first handling of each
 * sequence number comes in sequence order (by handler start time); for each shard, the handling
 * intervals of different members never overlap (a shard never has two owners at once); and where a
 * key moved to another shard, its next message was first handled only after the previous one was
 * acknowledged (the ack lines of the record files).
 */
export function checkHandled(
  files: readonly string[],
  sent: ReadonlyMap<string, number>,
): HandledCheck {
  const records = readRecords(files);
  const lines = records.handled.sort((a, b) => a.t0 - b.t0);
  const firstAck = new Map<string, number>();
  for (const ack of records.acks) {
    for (const id of ack.a) {
      const ref = `${ack.s}/${id}`;
      firstAck.set(ref, Math.min(firstAck.get(ref) ?? Number.POSITIVE_INFINITY, ack.t0));
    }
  }
  const first = new Map<string, HandledLine>();
  const seen = new Set<string>();
  const firstSeqs = new Map<string, number[]>();
  let duplicates = 0;
  for (const l of lines) {
    const id = `${l.k}#${l.q}`;
    if (seen.has(id)) {
      duplicates++;
      continue;
    }
    seen.add(id);
    first.set(id, l);
    const list = firstSeqs.get(l.k);
    if (list) list.push(l.q);
    else firstSeqs.set(l.k, [l.q]);
  }
  const orderViolations: string[] = [];
  for (const [key, list] of firstSeqs) {
    for (let i = 1; i < list.length; i++) {
      if ((list[i] as number) < (list[i - 1] as number)) {
        orderViolations.push(`${key}: seq ${list[i]} first handled after seq ${list[i - 1]}`);
        break;
      }
    }
  }
  const handledBeforeParentAck: string[] = [];
  let transitionsWithoutAck = 0;
  let transitions = 0;
  for (const [key, count] of sent) {
    for (let q = 1; q < count; q++) {
      const prev = first.get(`${key}#${q - 1}`);
      const next = first.get(`${key}#${q}`);
      if (!prev || !next || prev.s === next.s) continue;
      transitions++;
      const acked = firstAck.get(`${prev.s}/${prev.id}`);
      if (acked === undefined) transitionsWithoutAck++;
      else if (next.t0 < acked) {
        handledBeforeParentAck.push(
          `${key}: seq ${q} (shard ${next.s}) started at ${next.t0.toFixed(1)}, seq ${q - 1} (shard ${prev.s}) acked at ${acked.toFixed(1)}`,
        );
      }
    }
  }
  const missingSample: string[] = [];
  let missing = 0;
  for (const [key, count] of sent) {
    for (let q = 0; q < count; q++) {
      if (seen.has(`${key}#${q}`)) continue;
      missing++;
      if (missingSample.length < 10) missingSample.push(`${key}#${q}`);
    }
  }
  const byShard = new Map<number, HandledLine[]>();
  for (const l of lines) {
    const list = byShard.get(l.s);
    if (list) list.push(l);
    else byShard.set(l.s, [l]);
  }
  const ownerOverlaps: string[] = [];
  const handlersByShard = new Map<number, Set<string>>();
  for (const [shard, list] of byShard) {
    handlersByShard.set(shard, new Set(list.map((l) => l.m)));
    // Latest end per member so far: a handling overlaps another member's if it starts before
    // that member's latest handling (started earlier) ended.
    const lastEnd = new Map<string, number>();
    for (const l of list) {
      for (const [member, end] of lastEnd) {
        if (member !== l.m && l.t0 < end) {
          ownerOverlaps.push(
            `shard ${shard}: ${l.m} started ${l.k}#${l.q} at ${l.t0.toFixed(1)} while ${member} was handling until ${end.toFixed(1)}`,
          );
        }
      }
      lastEnd.set(l.m, Math.max(lastEnd.get(l.m) ?? 0, l.t1));
    }
  }
  return {
    records: lines.length,
    distinct: seen.size,
    duplicates,
    missing,
    missingSample,
    orderViolations,
    ownerOverlaps: ownerOverlaps.slice(0, 20),
    handledBeforeParentAck: handledBeforeParentAck.slice(0, 20),
    transitionsWithoutAck,
    transitions,
    handlersByShard,
  };
}
