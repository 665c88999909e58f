import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A message was delivered more than `maxDeliveries` times without being acknowledged: earlier
 * deliveries ended without an ack (a member crashed, or lost its shard, while handling it). The
 * reader dead-letters it (reason `max-deliveries`) with this error instead of handling it again,
 * so it cannot block its shard's keys for good.
 */
export class MaxDeliveriesExceededError extends StreamCoordinatorError {
  override readonly name = 'MaxDeliveriesExceededError';

  constructor(
    /** How many times the message has been delivered, this delivery included. */
    readonly deliveryCount: number,
    /** The handler's `maxDeliveries`. */
    readonly maxDeliveries: number,
  ) {
    super(
      `delivered ${deliveryCount} times without being acknowledged (maxDeliveries ${maxDeliveries})`,
    );
  }
}
