import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * `StreamCoordinatorTransport.on()` was called: the transport emits no transport events of its
 * own; the member's lifecycle is observed through `MemberRuntimeEvents`.
 *
 * @publicApi
 */
export class TransportEventsUnsupportedError extends StreamCoordinatorError {
  override readonly name = 'TransportEventsUnsupportedError';

  constructor() {
    super('StreamCoordinatorTransport does not emit transport events; use MemberRuntimeEvents');
  }
}
