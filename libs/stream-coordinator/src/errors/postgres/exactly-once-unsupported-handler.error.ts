import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * Exactly-once (`@ExactlyOnce()`, or `ExactlyOnceInterceptor` by `@UseInterceptors()` on the
 * method or on its controller) was asked for on a method that is not a `@StreamShardHandler`: an
 * `@EventPattern` handler of the microservice transport, an HTTP route, or a method application
 * code calls itself. Only the library's own handler call knows the stream entry to record, runs
 * one handler per stream and checks the offsets table before dead-lettering, so elsewhere every
 * message would fail (or the decorator would do nothing). Thrown at bootstrap by
 * `PostgresExactlyOnceModule`.
 *
 * @publicApi
 */
export class ExactlyOnceUnsupportedHandlerError extends StreamCoordinatorError {
  override name = 'ExactlyOnceUnsupportedHandlerError';

  constructor(
    /** Class that declares the method. */
    readonly className: string,
    /** The method. */
    readonly methodName: string,
    /** How exactly-once was asked for (`@ExactlyOnce()`, …). */
    readonly declared: string,
  ) {
    super(
      `${className}.${methodName} has ${declared} but is not a @StreamShardHandler method: exactly-once applies only to handlers the library calls itself, which know the stream entry to record, run one handler per stream and check the offsets table before dead-lettering; an @EventPattern handler of the microservice transport, an HTTP route or a method your code calls gets none of that; use @StreamShardHandler('<stream>') with StreamCoordinatorModule for this handler, or remove ${declared}`,
    );
  }
}
