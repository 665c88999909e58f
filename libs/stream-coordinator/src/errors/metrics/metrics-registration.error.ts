import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * A metric of this name is already registered in the chosen registry (a second application in
 * the same process, or the app's own metric of that name).
 *
 * @publicApi
 */
export class MetricsRegistrationError extends StreamCoordinatorError {
  override readonly name = 'MetricsRegistrationError';
}
