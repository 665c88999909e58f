import { Controller } from '@nestjs/common';
import { Ctx, EventPattern, Payload } from '@nestjs/microservices';
import type { StreamShardContext, StreamShardMessage } from '@redis-stream-coordinator/nestjs';
import { HandledOrders } from './handled-orders.js';
import type { Order } from './order.js';

/** The microservice side: one `orders` message at a time per shard, in key order. */
@Controller()
export class OrdersEventsController {
  constructor(private readonly handled: HandledOrders) {}

  // The explicit type argument picks the untyped overload, so @Ctx() can be typed.
  @EventPattern<string>('orders')
  handle(@Payload() message: StreamShardMessage<Order>, @Ctx() context: StreamShardContext): void {
    // Return → acknowledged. Throw → retried with backoff, then dead-lettered.
    this.handled.add({
      orderId: message.payload.orderId,
      customerId: message.key,
      shard: context.shard,
    });
  }
}
