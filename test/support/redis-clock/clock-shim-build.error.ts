/** The clock shim of a steppable-clock Redis could not be built. */
export class ClockShimBuildError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ClockShimBuildError';
  }
}
