import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { onProcessExit } from './process-cleanup.js';

/*
 * Short-lived child processes run to their end: a built tool or app that must exit on its own,
 * or a child Vitest. Long-running services (coordinator, workers, producer) are
 * `service-process.ts`; Redis servers are `redis-processes.ts`.
 */

/** A finished child process. */
export interface ChildRun {
  /** Exit code, or `null` when a signal ended it. */
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  /** stdout and stderr together, in the order they arrived. */
  readonly output: string;
  /** From spawn to the end of its output. */
  readonly ms: number;
}

/** Options of {@link runNode}. */
export interface RunNodeOptions {
  /** The child's whole environment (default: this process's). */
  readonly env?: NodeJS.ProcessEnv;
  readonly cwd?: string;
  /** The child is SIGKILLed and the run rejected (with its output so far) after this long. */
  readonly timeoutMs: number;
}

/**
 * Runs `node ...args` to its end and resolves its exit and output (a non-zero exit resolves
 * too). Bounded by `options.timeoutMs`; killed as well if the test process goes away first.
 */
export function runNode(args: readonly string[], options: RunNodeOptions): Promise<ChildRun> {
  return new Promise((resolveRun, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, [...args], {
      env: options.env ?? process.env,
      ...(options.cwd ? { cwd: options.cwd } : {}),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const unregister = onProcessExit(() => child.kill('SIGKILL'));
    let stdout = '';
    let stderr = '';
    let output = '';
    child.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
      output += c.toString();
    });
    child.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
      output += c.toString();
    });
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`node ${args.join(' ')} did not exit within ${options.timeoutMs} ms:\n${output}`),
      );
    }, options.timeoutMs);
    child.once('error', (error) => {
      clearTimeout(timer);
      unregister();
      reject(error);
    });
    // 'close', not 'exit': 'exit' can fire before the last output chunks are read from the pipes.
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      unregister();
      resolveRun({ code, signal, stdout, stderr, output, ms: Date.now() - started });
    });
  });
}

/** The result of a finished tool run ({@link runNodeTool}). */
export interface ToolRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a built Node entry point (`…/dist/…/main.js`) with `args` and `env` (added to the test's
 * environment), bounded by `timeoutMs`; resolves its exit code and output. Rejects only when the
 * tool did not finish (timed out or killed by a signal), never on a non-zero exit.
 */
export async function runNodeTool(
  entry: string,
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
  timeoutMs = 30_000,
): Promise<ToolRun> {
  if (!existsSync(entry))
    throw new Error(`${entry} is missing: run "npm run build" first (npm test does)`);
  const run = await runNode([entry, ...args], { env: { ...process.env, ...env }, timeoutMs });
  if (run.code === null) {
    throw new Error(`${entry} ${args.join(' ')} did not finish: ${run.signal}\n${run.stderr}`);
  }
  return { code: run.code, stdout: run.stdout, stderr: run.stderr };
}

/**
 * The environment for a child Vitest run: this process's plus `extra`, without the `VITEST*`
 * variables of the running test (with them the child would think it is a worker of this run).
 */
export function childVitestEnv(extra: Readonly<Record<string, string>> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra };
  for (const name of Object.keys(env)) if (name.startsWith('VITEST')) delete env[name];
  return env;
}

/** Vitest's CLI, for `runNode([VITEST_CLI, 'run', ...])` from the repository root. */
export const VITEST_CLI = 'node_modules/vitest/vitest.mjs';
