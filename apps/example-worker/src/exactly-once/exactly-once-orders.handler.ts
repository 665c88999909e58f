import { Inject, Injectable } from '@nestjs/common';
import {
  ShardContext,
  ShardMessage,
  StreamShardContext,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { ExactlyOnce, PgTransaction } from '@redis-stream-coordinator/nestjs/postgres';
import type { PoolClient } from 'pg';
import { HandledRecorder } from '../handled-recorder.js';
import { preciseNow } from '../record-clock.js';
import type { OrderEvent } from '../orders.handler.js';
import { WORKER_CONFIG } from '../worker.tokens.js';
import type { WorkerConfig } from '../worker-config.js';

/** The effects table: one row per applied entry (no unique key, so a double apply would show). */
export const ORDER_EFFECTS_DDL = `CREATE TABLE IF NOT EXISTS order_effects (
  n bigserial PRIMARY KEY,
  consumer_group text NOT NULL,
  entry_id text NOT NULL,
  stream text NOT NULL,
  shard integer NOT NULL,
  key text NOT NULL,
  seq integer NOT NULL,
  member_id text NOT NULL,
  delivery integer NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * The `orders` handler of the exactly-once mode: its write goes through the transaction
 * `@ExactlyOnce()` opens, which also records the entry id for the shard; a redelivered entry
 * whose transaction already committed never reaches this method.
 */
@Injectable()
export class ExactlyOnceOrdersHandler {
  /** Handler calls that resolved (an entry found already applied does not call it). */
  handled = 0;

  constructor(
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
    private readonly recorder: HandledRecorder,
  ) {}

  @StreamShardHandler('orders')
  @ExactlyOnce()
  async handle(
    @ShardMessage() message: StreamShardMessage<OrderEvent>,
    @ShardContext() context: StreamShardContext,
    @PgTransaction() tx: PoolClient,
  ): Promise<void> {
    const t0 = preciseNow();
    if (this.config.failKeyPrefix && message.key.startsWith(this.config.failKeyPrefix)) {
      throw new Error(`refusing ${message.key}: its key starts with ${this.config.failKeyPrefix}`);
    }
    const seq = typeof message.payload?.seq === 'number' ? message.payload.seq : -1;
    await tx.query(
      'INSERT INTO order_effects (consumer_group, entry_id, stream, shard, key, seq, member_id, delivery) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)',
      [
        context.group,
        message.id,
        message.stream,
        message.shard,
        message.key,
        seq,
        context.memberId,
        message.deliveryCount,
      ],
    );
    this.handled++;
    this.recorder.record({
      m: context.memberId,
      st: message.stream,
      s: message.shard,
      k: message.key,
      id: message.id,
      q: seq,
      d: message.deliveryCount,
      t0,
      t1: preciseNow(),
    });
  }
}
