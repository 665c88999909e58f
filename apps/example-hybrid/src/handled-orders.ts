import { Injectable } from '@nestjs/common';

/** One order the `orders` handler finished. */
export interface HandledOrder {
  readonly orderId: string;
  readonly customerId: string;
  readonly shard: number;
}

/** What the event handler did, for `GET /orders/handled` (a real app writes to its database). */
@Injectable()
export class HandledOrders {
  private readonly handled: HandledOrder[] = [];

  add(order: HandledOrder): void {
    this.handled.push(order);
  }

  list(): readonly HandledOrder[] {
    return this.handled;
  }
}
