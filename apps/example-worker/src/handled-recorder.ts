import { closeSync, openSync, writeSync } from 'node:fs';
import type { OnModuleDestroy } from '@nestjs/common';

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
 *
 * It holds the file open and closes it in `onModuleDestroy`, as a provider holding a database
 * pool would: a handler that still ran after that would fail. The library drains its handlers
 * before any provider's `onModuleDestroy`, so on a graceful stop none does.
 */
export class HandledRecorder implements OnModuleDestroy {
  private fd: number | undefined;
  private closed = false;

  constructor(
    private readonly file: string | undefined,
    private readonly teardownDelayMs = 0,
  ) {}

  get enabled(): boolean {
    return this.file !== undefined;
  }

  record(entry: HandledRecord): void {
    this.write(entry);
  }

  /** Appends one ack line. */
  recordAck(entry: AckRecord): void {
    this.write(entry);
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
    if (this.teardownDelayMs > 0) await new Promise((r) => setTimeout(r, this.teardownDelayMs));
  }

  private write(entry: HandledRecord | AckRecord): void {
    if (this.file === undefined) return;
    if (this.closed) throw new Error(`the record file ${this.file} is closed (shutting down)`);
    this.fd ??= openSync(this.file, 'a');
    writeSync(this.fd, `${JSON.stringify(entry)}\n`);
  }
}
