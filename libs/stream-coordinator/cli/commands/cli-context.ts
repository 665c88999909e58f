import type { CliHttpClient } from '../cli-http-client.js';
import type { CliIo } from '../cli-io.interface.js';
import type { ParsedArgs } from '../cli-args.js';

/** What a command gets. */
export interface CliContext {
  readonly client: CliHttpClient;
  readonly io: CliIo;
  readonly args: ParsedArgs;
  /** `--json`: machine-readable output. */
  readonly json: boolean;
}

/** Prints a value as indented JSON. */
export function printJson(ctx: CliContext, value: unknown): void {
  ctx.io.out(JSON.stringify(value, null, 2));
}

/** The path segment of a user-given name. */
export function segment(value: string): string {
  return encodeURIComponent(value);
}
