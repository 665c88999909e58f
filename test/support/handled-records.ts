import { existsSync, readFileSync } from 'node:fs';
import type { AckRecord, HandledRecord } from './invariants/invariant-input.types.js';

/*
 * The record files the example worker writes (`RECORD_FILE`, JSON lines): one line per handler
 * call and one per ack batch Redis accepted. This module is their only reader: the tests, the
 * invariant checker's input, the benchmarks and the demo all read them through it.
 */

/** One handled line of the example worker's `RECORD_FILE` (the invariant checker's record). */
export type HandledLine = HandledRecord;

/** One acknowledgement line of `RECORD_FILE` (the worker always writes `t0` and `st`). */
export type AckLine = AckRecord;

/** What {@link readRecordFiles} found. */
export interface RecordFiles {
  readonly handled: HandledLine[];
  /** Ack lines (`{"a": [...]}`); empty when the workers wrote none. */
  readonly acks: AckLine[];
  /** Lines that were neither (cut short, or not JSON). */
  readonly unreadable: number;
}

/**
 * Reads the workers' JSON-lines record files (missing files are skipped): handled-message lines
 * and ack lines (`{"a": [ids], "m", "s", "t"}`), told apart by the `a` field.
 */
export function readRecordFiles(files: readonly string[]): RecordFiles {
  const handled: HandledLine[] = [];
  const acks: AckLine[] = [];
  let unreadable = 0;
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const line of readFileSync(file, 'utf8').split('\n')) {
      if (line.trim() === '') continue;
      let value: unknown;
      try {
        value = JSON.parse(line);
      } catch {
        unreadable++;
        continue;
      }
      if (isAck(value)) acks.push(value);
      else if (isHandled(value)) handled.push(value);
      else unreadable++;
    }
  }
  return { handled, acks, unreadable };
}

/**
 * Every handled line of `files` (missing files count as empty, ack lines are skipped), oldest
 * handler start first.
 */
export function readHandled(files: readonly string[]): HandledLine[] {
  return readRecordFiles(files).handled.sort((a, b) => a.t0 - b.t0);
}

function isAck(value: unknown): value is AckLine {
  const v = value as Partial<AckRecord> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    Array.isArray(v.a) &&
    typeof v.m === 'string' &&
    typeof v.s === 'number' &&
    typeof v.t === 'number'
  );
}

function isHandled(value: unknown): value is HandledLine {
  const v = value as Partial<HandledRecord> | null;
  return (
    typeof v === 'object' &&
    v !== null &&
    typeof v.m === 'string' &&
    typeof v.s === 'number' &&
    typeof v.id === 'string' &&
    typeof v.k === 'string' &&
    typeof v.t0 === 'number' &&
    typeof v.t1 === 'number'
  );
}

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
  const records = readRecordFiles(files);
  const lines = records.handled.sort((a, b) => a.t0 - b.t0);
  const firstAck = new Map<string, number>();
  for (const ack of records.acks) {
    for (const id of ack.a) {
      const ref = `${ack.s}/${id}`;
      firstAck.set(ref, Math.min(firstAck.get(ref) ?? Number.POSITIVE_INFINITY, ack.t0 ?? ack.t));
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

/** `(key, seq)` pairs that were sent (`sent[key]` = count, seq 0 … count-1) but never handled. */
export function missingMessages(
  lines: readonly HandledLine[],
  sent: Readonly<Record<string, number>>,
): string[] {
  const seen = new Set(lines.map((l) => `${l.k}#${l.q}`));
  const missing: string[] = [];
  for (const [key, count] of Object.entries(sent)) {
    for (let q = 0; q < count; q++) if (!seen.has(`${key}#${q}`)) missing.push(`${key}#${q}`);
  }
  return missing;
}

/**
 * Keys whose first handlings were not in sequence order (a redelivered duplicate may come
 * later; the first handling of each seq must not): one description per offending key.
 */
export function orderViolations(lines: readonly HandledLine[]): string[] {
  const last = new Map<string, number>();
  const seen = new Set<string>();
  const bad = new Map<string, string>();
  for (const l of lines) {
    const id = `${l.k}#${l.q}`;
    if (seen.has(id)) continue;
    seen.add(id);
    const before = last.get(l.k) ?? -1;
    if (l.q < before && !bad.has(l.k))
      bad.set(l.k, `${l.k}: seq ${l.q} first handled after ${before}`);
    last.set(l.k, Math.max(before, l.q));
  }
  return [...bad.values()];
}

/**
 * Pairs of handlings of one shard by two different members whose intervals overlap (single
 * owner: a shard is handled by at most one member at any instant).
 */
export function ownerOverlaps(lines: readonly HandledLine[]): string[] {
  const byShard = new Map<string, HandledLine[]>();
  for (const l of lines) {
    const shard = `${l.st}/${l.s}`;
    const list = byShard.get(shard);
    if (list) list.push(l);
    else byShard.set(shard, [l]);
  }
  const overlaps: string[] = [];
  for (const [shard, list] of byShard) {
    const lastEnd = new Map<string, HandledLine>();
    for (const l of list) {
      for (const [member, other] of lastEnd) {
        if (member !== l.m && other.t1 > l.t0) {
          overlaps.push(
            `${shard}: ${member} handled ${other.id} until ${other.t1.toFixed(3)} while ${l.m} started ${l.id} at ${l.t0.toFixed(3)}`,
          );
        }
      }
      const previous = lastEnd.get(l.m);
      if (!previous || previous.t1 < l.t1) lastEnd.set(l.m, l);
    }
  }
  return overlaps;
}
