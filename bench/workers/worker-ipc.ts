import type { BenchMessage } from '../support/bench-child.js';

/** The worker's side of the IPC channel with the bench runner. */
export const ipc = {
  /** Sends a message to the runner (dropped when the channel is gone). */
  send(message: BenchMessage): void {
    if (process.send && process.connected) process.send(message);
  },
  /** Calls `handler` for every command; a thrown or rejected handler is reported as `error`. */
  onCommand(handler: (message: BenchMessage) => void | Promise<void>): void {
    process.on('message', (message: BenchMessage) => {
      Promise.resolve()
        .then(() => handler(message))
        .catch((error: unknown) => ipc.fail(error));
    });
  },
  /** Reports a failure to the runner. */
  fail(error: unknown): void {
    ipc.send({
      type: 'error',
      message: error instanceof Error ? (error.stack ?? error.message) : String(error),
    });
  },
};

/** A worker exits when the runner goes away (its IPC channel closes). */
process.on('disconnect', () => process.exit(0));

/** Reads a required environment variable or throws naming it. */
export function env(name: string): string {
  const value = process.env[name];
  if (value === undefined || value === '') throw new MissingBenchEnvError(name);
  return value;
}

/** Reads an integer environment variable (with a default). */
export function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isFinite(n))
    throw new MissingBenchEnvError(`${name} (a number, got ${JSON.stringify(raw)})`);
  return n;
}

/** A bench worker was started without a variable it needs. */
export class MissingBenchEnvError extends Error {
  override readonly name = 'MissingBenchEnvError';

  constructor(name: string) {
    super(`benchmark worker: environment variable ${name} is required`);
  }
}
