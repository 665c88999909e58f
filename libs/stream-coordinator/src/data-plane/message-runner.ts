import { MaxDeliveriesExceededError } from '../errors/data-plane/max-deliveries-exceeded.error.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import type { ReaderRedis } from '../redis/redis-connection.types.js';
import { backoffDelay, sleep } from './backoff.js';
import { deadLetterFields, toError } from './dead-letter.js';
import { decodeEntry } from './entry-codec.js';
import type { ShardCommands } from './shard-commands.js';
import type { ShardMessage } from './shard-message.js';
import type { ResolvedShardReaderOptions } from './shard-reader.options.js';
import type { DeadLetterReason, ShardReaderCounters } from './shard-reader.types.js';

/** How long one already-applied check may take before the reader's watchdog counts it late. */
const CHECK_EXPECTED_MS = 10_000;

/**
 * What became of one entry: `ack` — handled (or dead-lettered / dropped), acknowledge it;
 * `skip` — it vanished (deleted or trimmed) while being retried, nothing to acknowledge;
 * `stop` — the reader is stopping before a handler call on this delivery, leave it pending for
 * the next owner; `stop-failed` — the same, but a handler call ran on its current delivery (it
 * failed and waits to be retried, or the give-up ended it): that delivery was spent, it must stay
 * counted.
 */
export type Outcome = 'ack' | 'skip' | 'stop' | 'stop-failed';

/** What the runner needs from its reader. */
export interface RunnerContext {
  readonly options: ResolvedShardReaderOptions;
  readonly commands: ShardCommands;
  readonly counters: ShardReaderCounters;
  readonly signal: AbortSignal;
  /** Runs a short Redis call on the reader's connection (with the watchdog). */
  call<T>(operation: (connection: ReaderRedis) => Promise<T>): Promise<T>;
  /** A handler call starts (or begins waiting for a permit) at `at` (`performance.now()`). */
  handlerStarted(at: number): void;
  /**
   * `performance.now()` of the reader's last progress (a Redis call answering, a handler call
   * ending): the fast path takes it as the start of the next handler call, which follows at once,
   * so it needs one clock reading per message instead of two.
   */
  lastProgressAt(): number;
  /** The handler call ended at `at`. */
  handlerEnded(at: number): void;
  /** Records progress and how long the next wait may take. */
  touch(expectedMs: number): void;
}

/**
 * Takes one entry through decode → handle → (backoff → redeliver → handle)* → ack, or to the
 * dead-letter stream. Messages of a shard go through it one at a time.
 *
 * The common case — the entry decodes, a permit is free, the handler resolves on its first call —
 * has a fast path that allocates nothing besides the message and the handler's own promise: the
 * reader calls {@link prepare}, awaits `handle(message)` itself, then {@link succeeded} (or
 * {@link failed}). Everything else goes through {@link run} / {@link deliver}.
 */
export class MessageRunner {
  constructor(private readonly ctx: RunnerContext) {}

  /**
   * Fast path, step 1: decodes the entry and takes a concurrency permit without waiting, then
   * records that the handler starts. Returns the message to hand to `options.handle` (then call
   * {@link succeeded} or {@link failed}), `null` when the entry cannot take the fast path
   * (undecodable, or past `maxDeliveries`: use {@link run}), or `undefined` when it decoded but
   * no permit is free (use {@link deliver}, which waits for one) — `lastPrepared` holds it then.
   */
  prepare(id: string, fields: Buffer[], deliveryCount: number): ShardMessage | null | undefined {
    const { options } = this.ctx;
    if (deliveryCount > options.maxDeliveries) return null;
    let message: ShardMessage;
    try {
      message = decodeEntry(
        id,
        fields,
        deliveryCount,
        options.stream,
        options.shard,
        options.serializer,
      );
    } catch {
      return null;
    }
    const limiter = options.limiter;
    if (limiter !== undefined && !limiter.tryAcquire()) {
      this.lastPrepared = message;
      return undefined;
    }
    this.startedAt = this.ctx.lastProgressAt();
    this.ctx.handlerStarted(this.startedAt);
    this.lastHanded = message;
    return message;
  }

  /** The message {@link prepare} decoded when it returned `undefined`. */
  lastPrepared: ShardMessage | undefined;
  /**
   * The message last handed to the handler (its id and the delivery it came with). The claim
   * phase counts a new delivery for an entry pending on this member only when it is this one
   * at this count: any other entry of its own was never seen by the handler in its current
   * delivery (see the `claim` script).
   */
  lastHanded: ShardMessage | undefined;
  private startedAt = 0;

  /** Fast path, step 2: the handler call {@link prepare} started resolved. */
  succeeded(message: ShardMessage): 'ack' {
    const { options } = this.ctx;
    options.limiter?.release();
    const end = performance.now();
    this.ctx.handlerEnded(end);
    this.ctx.counters.handled++;
    const hooks = options.hooks;
    if (hooks.handled !== undefined) {
      try {
        hooks.handled(end - this.startedAt, message);
      } catch {
        // hooks must not disturb the reader
      }
    }
    return 'ack';
  }

  /**
   * Fast path, step 2: the handler call {@link prepare} started threw `thrown`, or its read of
   * the payload failed (`message.payloadError`; `thrown` is then not looked at): continues as the
   * slow path does — an undecodable payload is dead-lettered at once (retrying cannot make it
   * decodable) whatever the handler did next, unless an exactly-once handler's dead-letter
   * decision finds the entry applied (it committed before something read the payload); a failure
   * is logged, retried with backoff, then dead-lettered.
   */
  failed(id: string, fields: Buffer[], message: ShardMessage, thrown: unknown): Promise<Outcome> {
    this.ctx.options.limiter?.release();
    this.ctx.handlerEnded(performance.now());
    const undecodable = message.payloadError;
    if (undecodable !== undefined) {
      // (an exactly-once handler may have committed before the payload was read: decided first)
      return this.deadLetterUnlessApplied(id, fields, message, 'undecodable', undecodable);
    }
    return this.afterFailure(id, fields, message, toError(thrown));
  }

  /** Processes the entry `id` with `fields`, delivered `deliveryCount` times so far. */
  run(id: string, fields: Buffer[], deliveryCount: number): Promise<Outcome> {
    const { options, signal } = this.ctx;
    // given up (stopping, or the shard is lost): left pending for the next owner
    if (signal.aborted) return Promise.resolve('stop');
    let message: ShardMessage;
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
      return this.deadLetterThenAck(id, fields, deliveryCount, 'undecodable', toError(error));
    }
    if (deliveryCount > options.maxDeliveries) {
      // Earlier deliveries ended without an ack (a crash, a lost shard): the message has had
      // its tries; it must not block the shard again.
      const error = new MaxDeliveriesExceededError(deliveryCount, options.maxDeliveries);
      return this.deadLetterUnlessApplied(id, fields, message, 'max-deliveries', error);
    }
    return this.deliver(id, fields, message);
  }

  /** Handles a decoded message: handler calls (waiting for permits), retries, dead-letter. */
  async deliver(id: string, fields: Buffer[], message: ShardMessage): Promise<Outcome> {
    const { options, counters, signal } = this.ctx;
    const limiter = options.limiter;
    for (;;) {
      // the gate may stop the reader (lease ran out): then the entry stays pending
      options.beforeHandle?.(this.ctx.lastProgressAt());
      if (signal.aborted) return 'stop';
      // one handler call, under the concurrency limiter
      const start = performance.now();
      this.ctx.handlerStarted(start);
      if (limiter !== undefined && !limiter.tryAcquire()) {
        try {
          await limiter.acquire(signal);
        } catch {
          this.ctx.handlerEnded(performance.now());
          return 'stop';
        }
        if (signal.aborted) {
          // aborted as the permit came (the shard is lost or given up): no handler call
          limiter.release();
          this.ctx.handlerEnded(performance.now());
          return 'stop';
        }
      }
      let failure: Error | undefined;
      this.lastHanded = message;
      try {
        await options.handle(message);
      } catch (thrown) {
        failure = toError(thrown);
      } finally {
        limiter?.release();
      }
      const end = performance.now();
      this.ctx.handlerEnded(end);
      const undecodable = message.payloadError;
      if (undecodable !== undefined) {
        return this.deadLetterUnlessApplied(id, fields, message, 'undecodable', undecodable);
      }
      if (failure === undefined) {
        counters.handled++;
        if (options.hooks.handled !== undefined) {
          try {
            options.hooks.handled(end - start, message);
          } catch {
            // hooks must not disturb the reader
          }
        }
        return 'ack';
      }
      const next = await this.retry(id, fields, message, failure);
      if (typeof next === 'string') return next;
      fields = next.fields;
      message = next.message;
    }
  }

  /** After a failed handler call: log, then dead-letter, or retry (the other `deliver` calls). */
  private async afterFailure(
    id: string,
    fields: Buffer[],
    message: ShardMessage,
    failure: Error,
  ): Promise<Outcome> {
    const next = await this.retry(id, fields, message, failure);
    return typeof next === 'string' ? next : this.deliver(id, next.fields, next.message);
  }

  /**
   * The handler failed for `message`: counts and logs it, then either dead-letters it (a
   * `NonRetryableError`, or past `maxDeliveries`), or backs off and redelivers it (a new Redis
   * delivery) — resolving to the redelivered entry decoded for the next call, or to the outcome
   * when it ends here. A failure while the shard is being given up ends here, left pending.
   */
  private async retry(
    id: string,
    fields: Buffer[],
    message: ShardMessage,
    failure: Error,
  ): Promise<Outcome | { fields: Buffer[]; message: ShardMessage }> {
    const { options, counters, signal } = this.ctx;
    if (signal.aborted) {
      // The shard is being given up (revoke, fence, shutdown): the handler was told so through
      // its context's signal and may have stopped because of it. Not a failure of the message:
      // it stays pending, neither retried here nor dead-lettered; the next owner handles it.
      // A handler call ran on this delivery, so it stays counted (`stop-failed`): a message whose
      // handler only ends when aborted is not tried for free at every rebalance.
      options.logger.debug?.(
        `${this.label()}: handler stopped for entry ${id} while the shard is given up (${failure.message}); it stays pending`,
      );
      return 'stop-failed';
    }
    counters.failed++;
    options.logger.warn(
      `${this.label()}: handler failed for entry ${id} (delivery ${message.deliveryCount}/${options.maxDeliveries}): ${failure.message}`,
    );
    try {
      options.hooks.failed?.(failure, message);
    } catch {
      // hooks must not disturb the reader
    }
    // then: dead-letter, or back off and redeliver
    if (failure instanceof NonRetryableError) {
      return this.deadLetterUnlessApplied(id, fields, message, 'non-retryable', failure);
    }
    if (message.deliveryCount >= options.maxDeliveries) {
      return this.deadLetterUnlessApplied(id, fields, message, 'max-deliveries', failure);
    }
    // (the handler call failed before the shard was given up: this delivery is spent)
    if (signal.aborted) return 'stop-failed';
    const delay = backoffDelay(options.retry, message.deliveryCount, options.random);
    this.ctx.touch(delay);
    if (!(await sleep(delay, signal))) return 'stop-failed';
    counters.retried++;
    try {
      options.hooks.retried?.(message);
    } catch {
      // hooks must not disturb the reader
    }
    const next = await this.ctx.call((c) => this.ctx.commands.redeliver(c, id));
    if (next === null) {
      counters.missing++;
      options.logger.warn(
        `${this.label()}: entry ${id} was deleted or trimmed while being retried; skipping it`,
      );
      return 'skip';
    }
    const count = next[2] ?? message.deliveryCount + 1;
    try {
      return {
        fields: next[1],
        message: decodeEntry(id, next[1], count, options.stream, options.shard, options.serializer),
      };
    } catch (decodeError) {
      await this.deadLetter(id, next[1], count, 'undecodable', toError(decodeError));
      return 'ack';
    }
  }

  /**
   * Dead-letters a decoded entry that ran out of deliveries or failed for good — unless the
   * handler is exactly-once and the entry's effects were committed on an earlier delivery (a
   * crash between commit and ack, a commit that reached the server while its client saw an
   * error): that entry is acknowledged as handled, since a dead letter would claim a failure
   * and replaying it would apply the effects twice.
   */
  private async deadLetterUnlessApplied(
    id: string,
    fields: Buffer[],
    message: ShardMessage,
    reason: DeadLetterReason,
    error: Error,
  ): Promise<Outcome> {
    const check = this.ctx.options.alreadyApplied;
    if (check !== undefined) {
      const applied = await this.checkApplied(check, message);
      if (applied === 'stop') return 'stop';
      if (applied) {
        this.ctx.counters.handled++;
        this.ctx.options.logger.log(
          `${this.label()}: entry ${id} was applied on an earlier delivery (${message.deliveryCount} deliveries, ${reason}: ${error.message}); acknowledging it instead of dead-lettering it`,
        );
        return 'ack';
      }
    }
    return this.deadLetterThenAck(id, fields, message.deliveryCount, reason, error);
  }

  /**
   * Asks `check` whether the entry was applied, until it answers: a failed check (the database
   * unreachable) is logged and tried again with the retry backoff, the entry left pending —
   * neither acknowledged (it may not be applied) nor dead-lettered (it may be) nor passed over
   * (the shard's later entries would then be applied past it, and the offsets table would take
   * it for applied). No attempt cap: the loop is bounded by the shard's ownership — it ends with
   * `'stop'` when the reader stops (revoke, lost shard, shutdown) or the `beforeHandle` gate
   * stops it (lease ran out); the next owner asks again. One check per backoff delay. The check
   * gets the reader's signal and gives up when it fires (a check waiting for the offset row's
   * lock would hold a revoke or a shutdown up to its `lock_timeout`): unknown, so `'stop'`.
   */
  private async checkApplied(
    check: (message: ShardMessage, signal: AbortSignal) => Promise<boolean>,
    message: ShardMessage,
  ): Promise<boolean | 'stop'> {
    const { options, signal } = this.ctx;
    for (let attempt = 1; ; attempt++) {
      options.beforeHandle?.(this.ctx.lastProgressAt());
      if (signal.aborted) return 'stop';
      this.ctx.touch(CHECK_EXPECTED_MS);
      try {
        return await check(message, signal);
      } catch (thrown) {
        if (signal.aborted) return 'stop';
        const delay = backoffDelay(options.retry, attempt, options.random);
        options.logger.warn(
          `${this.label()}: could not check whether entry ${message.id} was applied (attempt ${attempt}): ${toError(thrown).message}; it stays pending, next check in ${Math.round(delay)} ms`,
        );
        this.ctx.touch(delay);
        if (!(await sleep(delay, signal))) return 'stop';
      }
    }
  }

  private async deadLetterThenAck(
    id: string,
    fields: Buffer[],
    deliveryCount: number,
    reason: DeadLetterReason,
    error: Error,
  ): Promise<Outcome> {
    await this.deadLetter(id, fields, deliveryCount, reason, error);
    return 'ack';
  }

  /**
   * Writes the entry to the dead-letter stream (after a fence check, so a fenced member writes
   * none), or drops it when dead-lettering is off. The caller acknowledges it afterwards.
   */
  async deadLetter(
    id: string,
    fields: Buffer[],
    deliveryCount: number,
    reason: DeadLetterReason,
    error: Error,
  ): Promise<void> {
    const { options, counters, commands } = this.ctx;
    if (!options.deadLetter) {
      counters.dropped++;
      options.logger.error(
        `${this.label()}: dropping entry ${id} (${reason}, ${deliveryCount} deliveries; dead-lettering is off): ${error.message}`,
      );
    } else {
      await this.ctx.call((c) => commands.ack(c, []));
      const entry = deadLetterFields({
        fields,
        stream: options.stream,
        shard: options.shard,
        group: options.group,
        id,
        reason,
        error,
        deliveryCount,
        memberId: options.memberId,
        failedAt: new Date(),
      });
      await this.ctx.call((c) => c.xadd(options.deadLetterKey, '*', ...entry));
      counters.deadLettered++;
      options.logger.warn(
        `${this.label()}: entry ${id} dead-lettered to ${options.deadLetterKey} (${reason}, ${deliveryCount} deliveries): ${error.message}`,
      );
    }
    try {
      options.hooks.deadLettered?.(reason, id, deliveryCount, options.deadLetter);
    } catch {
      // hooks must not disturb the reader
    }
  }

  private label(): string {
    return `${this.ctx.options.stream}[${this.ctx.options.shard}] (${this.ctx.options.key})`;
  }
}
