/**
 * The logger the data plane writes to. Nest's `Logger` / `LoggerService` fits as is; so does
 * `console`.
 */
export interface DataPlaneLogger {
  log(message: string, ...optionalParams: unknown[]): void;
  warn(message: string, ...optionalParams: unknown[]): void;
  error(message: string, ...optionalParams: unknown[]): void;
  debug?(message: string, ...optionalParams: unknown[]): void;
}

/** A logger that drops everything (the default). */
export const SILENT_LOGGER: DataPlaneLogger = {
  log: () => undefined,
  warn: () => undefined,
  error: () => undefined,
  debug: () => undefined,
};
