import { existsSync, readFileSync } from 'node:fs';
import type { AckRecord, HandledRecord } from './invariant-input.types.js';

/** What {@link readRecordFiles} found. */
export interface RecordFiles {
  readonly handled: HandledRecord[];
  /** Ack lines (`{"a": [...]}`); empty when the workers wrote none. */
  readonly acks: AckRecord[];
  /** Lines that were neither (cut short, or not JSON). */
  readonly unreadable: number;
}

/**
 * Reads the workers' JSON-lines record files (missing files are skipped): handled-message lines
 * and ack lines (`{"a": [ids], "m", "s", "t"}`), told apart by the `a` field.
 */
export function readRecordFiles(files: readonly string[]): RecordFiles {
  const handled: HandledRecord[] = [];
  const acks: AckRecord[] = [];
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

function isAck(value: unknown): value is AckRecord {
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

function isHandled(value: unknown): value is HandledRecord {
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
