/** The payload of an `orders` message: the customer is the routing key. */
export interface Order {
  readonly orderId: string;
  readonly customerId: string;
}
