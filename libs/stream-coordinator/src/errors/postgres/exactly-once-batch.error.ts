import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * `ExactlyOnceInterceptor` was given a batch (a `@StreamShardHandler` with `batch`, the
 * interceptor applied globally or by `@UseInterceptors()`): exactly-once applies one stream entry
 * per transaction. Thrown for the batch, which then fails without anything written.
 *
 * @publicApi
 */
export class ExactlyOnceBatchError extends StreamCoordinatorError {
  override name = 'ExactlyOnceBatchError';

  constructor() {
    super(
      'ExactlyOnceInterceptor was given a batch of messages: exactly-once applies one stream entry per transaction; do not apply it to a batch handler (drop `batch`, or write the batch in your own transaction)',
    );
  }
}
