/**
 * The app began shutting down while a start-up step waited for Redis: the start-up ends without
 * completing (not a failure: the process is stopping anyway).
 */
export class StartupStoppedError extends Error {
  override readonly name = 'StartupStoppedError';

  constructor(readonly step: string) {
    super(`the coordinator is shutting down; the start-up stopped waiting for Redis (${step})`);
  }
}
