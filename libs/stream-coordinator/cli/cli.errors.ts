/**
 * A failure the `rsc` CLI reports as one line on stderr with its exit code: 2 for a bad command
 * line, 1 for a request that failed.
 *
 * @publicApi
 */
export class CliError extends Error {
  override readonly name: string = 'CliError';

  constructor(
    message: string,
    readonly exitCode: 1 | 2,
  ) {
    super(message);
  }
}

/** The command line is wrong (unknown command or option, missing argument). Exit code 2. @publicApi */
export class CliUsageError extends CliError {
  override readonly name = 'CliUsageError';

  constructor(message: string) {
    super(`${message}; run "rsc --help" for usage`, 2);
  }
}

/** The coordinator answered with an error (its protocol code and message are kept). Exit code 1. @publicApi */
export class CliHttpError extends CliError {
  override readonly name = 'CliHttpError';

  constructor(
    readonly status: number,
    readonly code: string | null,
    message: string,
  ) {
    super(message, 1);
  }
}

/** The coordinator could not be reached (refused, unknown host, timeout). Exit code 1. @publicApi */
export class CliConnectionError extends CliError {
  override readonly name = 'CliConnectionError';

  constructor(message: string) {
    super(message, 1);
  }
}
