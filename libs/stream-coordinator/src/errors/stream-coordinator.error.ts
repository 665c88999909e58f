/**
 * Base class of every error the library throws, so callers can tell them apart with one
 * `instanceof` check.
 *
 * @publicApi
 */
export class StreamCoordinatorError extends Error {
  override name = 'StreamCoordinatorError';
}
