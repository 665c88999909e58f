/** The payload of an `orders` entry; the entry's key is the customer id. */
export interface OrderPlaced {
  readonly orderId: string;
  readonly amountCents: number;
}

/** An `orders` entry whose payload is not an {@link OrderPlaced}: dead-lettered at once. */
export class InvalidOrderError extends Error {
  constructor(entryId: string, payload: unknown) {
    super(
      `entry ${entryId} is not an order: expected {orderId: string, amountCents: integer}, got ${JSON.stringify(payload)}`,
    );
    this.name = 'InvalidOrderError';
  }
}

/** The payload as an order, or throws {@link InvalidOrderError}. */
export function parseOrderPlaced(entryId: string, payload: unknown): OrderPlaced {
  const order = payload as Partial<OrderPlaced> | null;
  if (
    typeof order?.orderId !== 'string' ||
    order.orderId === '' ||
    !Number.isInteger(order.amountCents)
  ) {
    throw new InvalidOrderError(entryId, payload);
  }
  return { orderId: order.orderId, amountCents: order.amountCents as number };
}
