import { setTimeout as delay } from 'node:timers/promises';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  StreamShardHandler,
  type StreamShardMessage,
  StreamShardContext,
} from '@redis-stream-coordinator/nestjs';
import { HandledRecorder } from './handled-recorder.js';
import { preciseNow } from './record-clock.js';
import { WORKER_CONFIG } from './worker.tokens.js';
import type { WorkerConfig } from './worker-config.js';

/** The payload the example producer writes. */
export interface OrderEvent {
  readonly seq: number;
  readonly amount?: number;
}

/**
 * The example handler: one `@StreamShardHandler` method. Messages of one shard arrive one after
 * another, in order; resolving acknowledges, throwing retries (then dead-letters).
 *
 * Its simulated work listens to `context.signal`, as any long handler should: when this member
 * gives the shard up (revoke, fence, shutdown) the wait ends at once and the handler throws; the
 * message then stays pending for the shard's next owner — neither retried here nor dead-lettered.
 */
@Injectable()
export class OrdersHandler {
  private readonly logger = new Logger(OrdersHandler.name);
  handled = 0;

  constructor(
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    private readonly recorder: HandledRecorder,
  ) {}

  // retries, batch size and ordering come from the module's handlerDefaults (MAX_DELIVERIES,
  // BATCH_SIZE, ORDERING, MAX_CONCURRENCY)
  @StreamShardHandler('orders')
  async handle(
    message: StreamShardMessage<OrderEvent>,
    context: StreamShardContext,
  ): Promise<void> {
    const t0 = preciseNow();
    if (this.config.failKeyPrefix && message.key.startsWith(this.config.failKeyPrefix)) {
      throw new Error(`refusing ${message.key}: its key starts with ${this.config.failKeyPrefix}`);
    }
    if (this.config.handlerDelayMs > 0) {
      // ends early, rejecting, when the shard is given up (context.signal.reason says why)
      await delay(this.config.handlerDelayMs, undefined, { signal: context.signal });
    }
    this.handled++;
    this.recorder.record({
      m: context.memberId,
      st: message.stream,
      s: message.shard,
      k: message.key,
      id: message.id,
      q: typeof message.payload?.seq === 'number' ? message.payload.seq : -1,
      d: message.deliveryCount,
      t0,
      t1: preciseNow(),
    });
    if (this.handled % 10_000 === 0) this.logger.log(`handled ${this.handled} messages`);
  }
}
