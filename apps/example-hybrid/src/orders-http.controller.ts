import { BadRequestException, Body, Controller, Get, Inject, Post } from '@nestjs/common';
import type { ClientProxy } from '@nestjs/microservices';
import type { StreamEvent } from '@redis-stream-coordinator/nestjs/microservices';
import { lastValueFrom } from 'rxjs';
import { type HandledOrder, HandledOrders } from './handled-orders.js';
import { ORDERS_CLIENT } from './hybrid.tokens.js';
import type { Order } from './order.js';

/** The HTTP side: takes orders and publishes them, keyed by customer; shows what was handled. */
@Controller('orders')
export class OrdersHttpController {
  constructor(
    @Inject(ORDERS_CLIENT) private readonly client: ClientProxy,
    private readonly handled: HandledOrders,
  ) {}

  /** Publishes the order to `orders` and answers with its stream entry id. */
  @Post()
  async place(@Body() body: Partial<Order> | undefined): Promise<{ id: string }> {
    const { orderId, customerId } = body ?? {};
    if (typeof orderId !== 'string' || typeof customerId !== 'string')
      throw new BadRequestException('body must be { "orderId": string, "customerId": string }');
    const event: StreamEvent<Order> = { key: customerId, value: { orderId, customerId } };
    const id = await lastValueFrom(this.client.emit<string>('orders', event));
    return { id };
  }

  @Get('handled')
  list(): readonly HandledOrder[] {
    return this.handled.list();
  }
}
