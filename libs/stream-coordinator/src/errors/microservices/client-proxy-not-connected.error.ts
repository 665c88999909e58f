import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * `StreamCoordinatorClientProxy.unwrap()` was called before `connect()`, or after `close()`: the
 * client has no publisher yet.
 *
 * @publicApi
 */
export class ClientProxyNotConnectedError extends StreamCoordinatorError {
  override readonly name = 'ClientProxyNotConnectedError';

  constructor() {
    super(
      'StreamCoordinatorClientProxy is not connected yet: await client.connect() before unwrap() (and again after close())',
    );
  }
}
