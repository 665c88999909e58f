import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * `StreamCoordinatorTransport.unwrap()` was called before the transport started listening: there
 * is no member runtime yet.
 *
 * @publicApi
 */
export class TransportNotListeningError extends StreamCoordinatorError {
  override readonly name = 'TransportNotListeningError';

  constructor() {
    super(
      'StreamCoordinatorTransport is not listening yet: call unwrap() once app.listen() (or startAllMicroservices()) has resolved',
    );
  }
}
