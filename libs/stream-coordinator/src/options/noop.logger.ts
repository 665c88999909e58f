import type { LoggerService } from '@nestjs/common';

/**
 * The logger behind `logger: false`: drops everything.
 *
 * @internal
 */
export class NoopLogger implements LoggerService {
  log(): void {}
  error(): void {}
  warn(): void {}
  debug(): void {}
  verbose(): void {}
  fatal(): void {}
}
