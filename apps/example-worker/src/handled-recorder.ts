import { appendFileSync } from 'node:fs';

/** One handled message, as the tests' invariant checker and the demo read it. */
export interface HandledRecord {
  /** Member id. */
  m: string;
  /** Stream, shard, routing key, entry id. */
  st: string;
  s: number;
  k: string;
  id: string;
  /** Per-key sequence number from the payload (or -1). */
  q: number;
  /** Delivery count. */
  d: number;
  /** Handler start and end, wall clock ms with sub-ms precision. */
  t0: number;
  t1: number;
}

/** One acknowledgement batch Redis accepted (the fenced ack passed), told apart by `a`. */
export interface AckRecord {
  /** Entry ids acknowledged. */
  a: readonly string[];
  /** Member id. */
  m: string;
  /** Shard. */
  s: number;
  /** When Redis had answered the ack, wall clock ms with sub-ms precision. */
  t: number;
  /** When the ack was sent (Redis applied it between `t0` and `t`). */
  t0: number;
  /** Stream. */
  st: string;
}

/**
 * Appends handled messages (and, through {@link AckRecorder}, ack batches) to a JSON-lines file,
 * synchronously: a handled line is in the kernel before the handler returns (and so before the
 * ack), so it survives the process being killed.
 */
export class HandledRecorder {
  constructor(private readonly file: string | undefined) {}

  get enabled(): boolean {
    return this.file !== undefined;
  }

  record(entry: HandledRecord): void {
    if (this.file) appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }

  /** Appends one ack line. */
  recordAck(entry: AckRecord): void {
    if (this.file) appendFileSync(this.file, `${JSON.stringify(entry)}\n`);
  }
}

/** Wall-clock time in ms with sub-millisecond precision (comparable across local processes). */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}
