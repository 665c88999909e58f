import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';

/** The result of a finished tool run. */
export interface ToolRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a built Node entry point (`…/dist/…/main.js`) with `args` and `env` (added to the test's
 * environment), bounded by `timeoutMs`; resolves its exit code and output, never rejects on a
 * non-zero exit.
 */
export function runNodeTool(
  entry: string,
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
  timeoutMs = 30_000,
): Promise<ToolRun> {
  if (!existsSync(entry))
    throw new Error(`${entry} is missing: run "npm run build" first (npm test does)`);
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      [entry, ...args],
      { env: { ...process.env, ...env }, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        if (error && typeof error.code !== 'number') {
          reject(
            new Error(`${entry} ${args.join(' ')} did not finish: ${error.message}\n${stderr}`),
          );
          return;
        }
        resolve({ code: typeof error?.code === 'number' ? error.code : 0, stdout, stderr });
      },
    );
  });
}
