import { StreamCoordinatorError } from './stream-coordinator.error.js';

/**
 * The application could not be set up so that the library drains its handlers in the first
 * teardown hook (before any other provider's `onModuleDestroy`): the Nest version in use orders
 * its modules' lifecycle hooks differently from the one the library was built against, or
 * something else moved a module before the library's drain module. Raised at bootstrap, so a
 * graceful shutdown never silently runs handlers against providers that are already torn down.
 */
export class ShutdownOrderError extends StreamCoordinatorError {
  override name = 'ShutdownOrderError';

  constructor(detail: string) {
    super(
      `cannot make the stream coordinator's drain the application's first teardown hook: ${detail}. Handlers would keep running while other providers' onModuleDestroy closes their resources; use the Nest version this library supports, or report this with your Nest version`,
    );
  }
}
