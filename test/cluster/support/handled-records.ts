import { existsSync, readFileSync } from 'node:fs';
import type { HandledLine } from '../../support/handled-records.js';

export type { HandledLine } from '../../support/handled-records.js';

/** Every handled line of `files`, oldest handler start first. */
export function readHandled(files: readonly string[]): HandledLine[] {
  const lines: HandledLine[] = [];
  for (const file of files) {
    if (!existsSync(file)) continue;
    for (const raw of readFileSync(file, 'utf8').split('\n')) {
      if (raw.trim() !== '') lines.push(JSON.parse(raw) as HandledLine);
    }
  }
  return lines.sort((a, b) => a.t0 - b.t0);
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
