import { Controller, Logger } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { StreamShardContext, StreamShardMessage } from '@redis-stream-coordinator/nestjs';

/** The payload of an `orders` message: the customer is the routing key. */
export interface Order {
  readonly orderId: string;
  readonly customerId: string;
}

/**
 * `@EventPattern` handlers: the pattern is the stream. Messages of one shard arrive one after
 * another, so a customer's orders are handled in the order they were published.
 */
@Controller()
export class OrdersController {
  private readonly logger = new Logger('Orders');

  // The explicit type argument picks the untyped overload, so @Ctx() can be typed.
  @EventPattern<string>('orders')
  handle(@Payload() message: StreamShardMessage<Order>, @Ctx() context: StreamShardContext): void {
    // Return → acknowledged. Throw → retried with backoff, then dead-lettered.
    this.logger.log(
      `order ${message.payload.orderId} of ${message.key} handled (shard ${context.shard}, delivery ${message.deliveryCount})`,
    );
  }
}
