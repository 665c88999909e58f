import { MaxDeliveriesExceededError } from '../errors/data-plane/max-deliveries-exceeded.error.js';
import type { ResolvedStreamShardBatchOptions } from '../interfaces/stream-shard-batch.interface.js';
import type { StreamShardMessage } from '../interfaces/stream-shard-message.interface.js';
import { backoffDelay, sleep } from './backoff.js';
import { batchFailures, decideBatch, type BatchItemState } from './batch-decision.js';
import { toError } from './dead-letter.js';
import { decodeEntry } from './entry-codec.js';
import type { MessageRunner, RunnerContext } from './message-runner.js';
import type { RawStreamEntry } from './raw-entry.types.js';
import type { ShardMessage } from './shard-message.js';

/** What the batch runner needs from its reader, besides what the message runner needs. */
export interface BatchRunnerContext extends RunnerContext {
  readonly batch: ResolvedStreamShardBatchOptions;
  /** The batch handler: resolves to its result (see `StreamShardBatchResult`). */
  readonly handleBatch: (messages: readonly StreamShardMessage[]) => Promise<unknown>;
  /** The message runner (its dead-lettering, and the claim phase's `lastHanded`). */
  readonly runner: MessageRunner;
  /** Queues handled (or dead-lettered) entry ids for the fenced ack. */
  ack(ids: readonly string[]): Promise<void>;
  /**
   * One more gated read of up to `count` new entries, blocking up to `blockMs` (filling a batch
   * during `maxWaitMs`). Rejects with `ReaderStoppedError` when the reader stops meanwhile.
   */
  readMore(count: number, blockMs: number): Promise<RawStreamEntry[]>;
}

/** True when no message of the batch failed to decode its payload (when read). */
function allDecodable(items: readonly BatchItem[]): boolean {
  for (const item of items) if (item.message.payloadError !== undefined) return false;
  return true;
}

/** One message of a batch with the entry it came from. */
interface BatchItem {
  readonly id: string;
  readonly fields: Buffer[];
  readonly message: ShardMessage;
}

/**
 * Hands the entries of one shard to a batch handler, in entry order, `batch.maxSize` at a time,
 * and settles each batch as {@link decideBatch} says: an acknowledged prefix (handled, or
 * dead-lettered when it cannot be retried), then the first retryable failure and everything
 * after it redelivered together after a backoff and handed over again as the next call.
 *
 * An entry that cannot be handed over at all (undecodable, or past `maxDeliveries` when read)
 * ends the batch before it: that batch is handled first, then the entry is dead-lettered, so
 * dead-lettering follows entry order too. One handler call takes one concurrency permit.
 */
export class BatchRunner {
  constructor(private readonly ctx: BatchRunnerContext) {}

  /**
   * Handles `entries` (read or claimed, in id order). With `fill`, a batch smaller than `maxSize`
   * waits up to `maxWaitMs` from now for more new entries. Resolves `false` when the reader is
   * stopping (what was not handled stays pending for the next owner).
   */
  async handle(entries: readonly RawStreamEntry[], fill: boolean): Promise<boolean> {
    const { batch, signal } = this.ctx;
    let all = entries;
    if (fill && entries.length < batch.maxSize && batch.maxWaitMs > 0) {
      all = await this.fill(entries);
      if (signal.aborted) return false;
    }
    const { options } = this.ctx;
    let items: BatchItem[] = [];
    for (const entry of all) {
      const id = entry[0].toString();
      const fields = entry[1];
      const deliveryCount = entry[2] ?? 1;
      let message: ShardMessage | undefined;
      let unusable: { reason: 'undecodable' | 'max-deliveries'; error: Error } | undefined;
      try {
        message = decodeEntry(
          id,
          fields,
          deliveryCount,
          options.stream,
          options.shard,
          options.serializer,
        );
      } catch (error) {
        unusable = { reason: 'undecodable', error: toError(error) };
      }
      if (unusable === undefined && deliveryCount > options.maxDeliveries) {
        const error = new MaxDeliveriesExceededError(deliveryCount, options.maxDeliveries);
        unusable = { reason: 'max-deliveries', error };
      }
      if (unusable === undefined && message !== undefined) {
        items.push({ id, fields, message });
        if (items.length < batch.maxSize) continue;
      }
      if (items.length > 0 && !(await this.run(items))) return false;
      items = [];
      if (unusable !== undefined) {
        if (signal.aborted) return false;
        await this.ctx.runner.deadLetter(
          id,
          fields,
          deliveryCount,
          unusable.reason,
          unusable.error,
        );
        await this.ctx.ack([id]);
      }
    }
    return items.length === 0 || (await this.run(items));
  }

  /** Reads more new entries until `maxSize` or `maxWaitMs` (stops quietly when the reader stops). */
  private async fill(entries: readonly RawStreamEntry[]): Promise<readonly RawStreamEntry[]> {
    const { batch, signal } = this.ctx;
    const all = [...entries];
    const deadline = performance.now() + batch.maxWaitMs;
    while (all.length < batch.maxSize && !signal.aborted) {
      const left = Math.ceil(deadline - performance.now());
      if (left <= 0) break;
      let more: RawStreamEntry[];
      try {
        more = await this.ctx.readMore(batch.maxSize - all.length, left);
      } catch (error) {
        if (signal.aborted) break;
        throw error;
      }
      for (const entry of more) all.push(entry);
    }
    return all;
  }

  /** One batch through handler calls and retries. Resolves `false` when the reader is stopping. */
  private async run(first: BatchItem[]): Promise<boolean> {
    const { options, signal } = this.ctx;
    const limiter = options.limiter;
    let items = first;
    while (items.length > 0) {
      // the gate may stop the reader (lease ran out): then the batch stays pending
      options.beforeHandle?.(this.ctx.lastProgressAt());
      if (signal.aborted) return false;
      const start = performance.now();
      this.ctx.handlerStarted(start);
      if (limiter !== undefined && !limiter.tryAcquire()) {
        try {
          await limiter.acquire(signal);
        } catch {
          this.ctx.handlerEnded(performance.now());
          return false;
        }
      }
      const messages = items.map((item) => item.message);
      this.ctx.runner.lastHanded = messages[messages.length - 1];
      let failures: Map<number, Error> | undefined;
      let whole: Error | undefined;
      try {
        const result = await this.ctx.handleBatch(messages);
        failures = batchFailures(
          result,
          items.map((item) => item.id),
          options.stream,
        );
      } catch (thrown) {
        whole = toError(thrown);
      } finally {
        limiter?.release();
      }
      const end = performance.now();
      this.ctx.handlerEnded(end);
      if (whole === undefined && failures?.size === 0 && allDecodable(items)) {
        // the common case: every message handled, all acked (also while the shard is given up)
        this.handledAll(items, end - start);
        await this.ctx.ack(items.map((item) => item.id));
        return !signal.aborted;
      }
      const states: BatchItemState[] = items.map((item, index) => {
        const failure = whole ?? failures?.get(index);
        const undecodable = item.message.payloadError;
        return {
          deliveryCount: item.message.deliveryCount,
          ...(failure === undefined ? {} : { failure }),
          ...(undecodable === undefined ? {} : { undecodable }),
        };
      });
      const decision = decideBatch(states, options.maxDeliveries);
      this.report(items, states, end - start, decision.handled);
      if (signal.aborted) {
        // The shard is being given up: the handler may have stopped because of it. What it
        // handled before the first failure is acked; nothing is dead-lettered or retried here.
        const handled: string[] = [];
        for (let index = 0; index < states.length; index++) {
          const state = states[index] as BatchItemState;
          if (state.failure !== undefined || state.undecodable !== undefined) break;
          handled.push((items[index] as BatchItem).id);
        }
        if (handled.length > 0) await this.ctx.ack(handled);
        return false;
      }
      // settle the prefix in entry order: dead-letters are written before anything is acked
      const settled: string[] = [];
      const deadLetters = new Map(decision.deadLetters.map((dead) => [dead.index, dead]));
      const settledUntil = decision.retryFrom ?? items.length;
      for (let index = 0; index < settledUntil; index++) {
        const item = items[index] as BatchItem;
        const dead = deadLetters.get(index);
        if (dead !== undefined) {
          await this.ctx.runner.deadLetter(
            item.id,
            item.fields,
            item.message.deliveryCount,
            dead.reason,
            dead.error,
          );
        }
        settled.push(item.id);
      }
      if (settled.length > 0) await this.ctx.ack(settled);
      if (decision.retryFrom === undefined) return true;
      const rest = items.slice(decision.retryFrom);
      const next = await this.redeliver(rest);
      if (next === undefined) return false;
      items = next;
    }
    return true;
  }

  /** Counts and hooks for a call that handled every message. */
  private handledAll(items: readonly BatchItem[], durationMs: number): void {
    const { options, counters } = this.ctx;
    counters.handled += items.length;
    const hooks = options.hooks;
    if (hooks.handled === undefined) return;
    for (const item of items) {
      try {
        hooks.handled(durationMs, item.message);
      } catch {
        // hooks must not disturb the reader
      }
    }
  }

  /** Counts, hooks and one log line for a handler call. */
  private report(
    items: readonly BatchItem[],
    states: readonly BatchItemState[],
    durationMs: number,
    handled: readonly number[],
  ): void {
    const { options, counters } = this.ctx;
    const hooks = options.hooks;
    counters.handled += handled.length;
    if (hooks.handled !== undefined) {
      for (const index of handled) {
        try {
          hooks.handled(durationMs, (items[index] as BatchItem).message);
        } catch {
          // hooks must not disturb the reader
        }
      }
    }
    let failed = 0;
    let firstFailure: { id: string; error: Error } | undefined;
    for (let index = 0; index < states.length; index++) {
      const failure = (states[index] as BatchItemState).failure;
      if (failure === undefined) continue;
      const item = items[index] as BatchItem;
      failed++;
      firstFailure ??= { id: item.id, error: failure };
      try {
        hooks.failed?.(failure, item.message);
      } catch {
        // hooks must not disturb the reader
      }
    }
    counters.failed += failed;
    if (firstFailure !== undefined && !this.ctx.signal.aborted) {
      options.logger.warn(
        `${this.label()}: batch handler failed for ${failed} of ${items.length} entries (first ${firstFailure.id}, delivery ${(items[0] as BatchItem).message.deliveryCount}/${options.maxDeliveries}): ${firstFailure.error.message}`,
      );
    }
  }

  /**
   * Backs off, then redelivers `rest` (each entry a new Redis delivery, fenced) for the next
   * handler call. Entries deleted meanwhile are skipped, undecodable ones dead-lettered (after the
   * entries before them were handed over: they split the batch). Resolves `undefined` when the
   * reader is stopping.
   */
  private async redeliver(rest: readonly BatchItem[]): Promise<BatchItem[] | undefined> {
    const { options, counters, signal } = this.ctx;
    const head = rest[0] as BatchItem;
    const delay = backoffDelay(options.retry, head.message.deliveryCount, options.random);
    this.ctx.touch(delay);
    if (!(await sleep(delay, signal))) return undefined;
    const next: BatchItem[] = [];
    for (const item of rest) {
      if (signal.aborted) return undefined;
      counters.retried++;
      try {
        options.hooks.retried?.(item.message);
      } catch {
        // hooks must not disturb the reader
      }
      const entry = await this.ctx.call((c) => this.ctx.commands.redeliver(c, item.id));
      if (entry === null) {
        counters.missing++;
        options.logger.warn(
          `${this.label()}: entry ${item.id} was deleted or trimmed while being retried; skipping it`,
        );
        continue;
      }
      const count = entry[2] ?? item.message.deliveryCount + 1;
      let message: ShardMessage;
      try {
        message = decodeEntry(
          item.id,
          entry[1],
          count,
          options.stream,
          options.shard,
          options.serializer,
        );
      } catch (error) {
        // hand over what came before it first, keeping order
        if (next.length > 0 && !(await this.run(next.splice(0)))) return undefined;
        await this.ctx.runner.deadLetter(item.id, entry[1], count, 'undecodable', toError(error));
        await this.ctx.ack([item.id]);
        continue;
      }
      next.push({ id: item.id, fields: entry[1], message });
    }
    return next;
  }

  private label(): string {
    const { options } = this.ctx;
    return `${options.stream}[${options.shard}] (${options.key})`;
  }
}
