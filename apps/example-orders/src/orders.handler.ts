import { Injectable } from '@nestjs/common';
import {
  ShardMessage,
  StreamShardHandler,
  type StreamShardMessage,
} from '@redis-stream-coordinator/nestjs';
import { ExactlyOnce, PgTransaction } from '@redis-stream-coordinator/nestjs/postgres';
import type { PoolClient } from 'pg';
import { InvalidOrderError, parseOrderPlaced } from './order-placed.js';

/**
 * Writes each `orders` entry into the `orders` table exactly once: the insert goes through the
 * transaction `@ExactlyOnce()` opens, which also records the entry id for its shard and commits
 * before the entry is acknowledged. A redelivered entry whose transaction committed is skipped.
 */
@Injectable()
export class OrdersHandler {
  @StreamShardHandler('orders', { nonRetryable: [InvalidOrderError] })
  @ExactlyOnce()
  async handle(
    @ShardMessage() message: StreamShardMessage<unknown>,
    @PgTransaction() tx: PoolClient,
  ): Promise<void> {
    const order = parseOrderPlaced(message.id, message.payload);
    await tx.query(
      'INSERT INTO orders (order_id, customer_id, amount_cents, stream_entry_id) VALUES ($1, $2, $3, $4)',
      [order.orderId, message.key, order.amountCents, message.id],
    );
  }
}
