/** What a CLI run reads and writes (the process's, or a test's). */
export interface CliIo {
  /** Writes one line to stdout. */
  out(line: string): void;
  /** Writes one line to stderr. */
  err(line: string): void;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Aborts `events tail --follow` (SIGINT/SIGTERM in the process). */
  readonly signal?: AbortSignal;
}
