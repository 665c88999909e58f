/** A polled condition did not hold in time (the helpers of `wait.ts`). */
export class WaitTimeoutError extends Error {
  constructor(
    readonly what: string,
    readonly timeoutMs: number,
    /** The last value, problems or error seen, when the wait knew one. */
    readonly last?: string,
  ) {
    super(`timed out after ${timeoutMs} ms waiting for ${what}${last ? `:\n  ${last}` : ''}`);
    this.name = 'WaitTimeoutError';
  }
}
