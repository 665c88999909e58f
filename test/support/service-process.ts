import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onProcessExit, type Unregister } from './process-cleanup.js';
import { waitFor, WaitTimeoutError } from './wait.js';

/** Options of {@link ServiceProcess.launch}. */
export interface ServiceProcessOptions {
  /** A built entry point (`apps/<app>/dist/main.js`). */
  readonly entry: string;
  readonly env: NodeJS.ProcessEnv;
  readonly port: number;
  /** Path polled until it answers 200 (`/health/ready`, `/status`). */
  readonly readyPath: string;
  readonly readyTimeoutMs: number;
  /** Name used in error messages. */
  readonly name: string;
}

/**
 * A built Node app of this repository run as a child process on a known port: started, waited
 * for until its ready path answers 200, stopped or killed by the test, and killed at the latest
 * when the test process exits.
 */
export class ServiceProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  private unregister: Unregister = () => {};
  private logs: string[] = [];
  /**
   * When each run of the process was seen to die by SIGKILL (wall-clock ms, at its `exit`): a
   * kill by the test, a stop that had to escalate, or the process killing itself.
   */
  readonly sigkilledAt: number[] = [];

  protected constructor(readonly options: ServiceProcessOptions) {}

  /** Starts a process and waits until it is ready. */
  static async launch(options: ServiceProcessOptions): Promise<ServiceProcess> {
    const service = new ServiceProcess(options);
    await service.launch();
    return service;
  }

  get port(): number {
    return this.options.port;
  }

  /** Base URL, e.g. `http://127.0.0.1:54321`. */
  get url(): string {
    return `http://127.0.0.1:${this.options.port}`;
  }

  /** Process id of the running child. */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Whether the child is still running. */
  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Everything the process printed so far (the most recent part). */
  output(): string {
    return this.logs.join('');
  }

  protected async launch(): Promise<void> {
    const { entry, env, name } = this.options;
    if (!existsSync(entry))
      throw new Error(`${entry} is missing: run "npm run build" first (npm test does)`);
    const child = spawn(process.execPath, [entry], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const collect = (chunk: Buffer): void => {
      this.logs.push(chunk.toString());
      if (this.logs.length > 2000) this.logs.splice(0, 1000);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolveExit) =>
      child.once('exit', (code, signal) => {
        if (signal === 'SIGKILL') this.sigkilledAt.push(Date.now());
        resolveExit(code);
      }),
    );
    this.unregister = onProcessExit(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    await this.waitReady(child, name);
  }

  private async waitReady(child: ChildProcess, name: string): Promise<void> {
    const ready = async (): Promise<boolean> => {
      if (child.exitCode !== null || child.signalCode !== null) {
        throw new Error(
          `${name} exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${this.output()}`,
        );
      }
      try {
        const res = await fetch(`${this.url}${this.options.readyPath}`, {
          signal: AbortSignal.timeout(1000),
        });
        return res.status === 200;
      } catch {
        return false; // not listening yet
      }
    };
    try {
      await waitFor(ready, { timeoutMs: this.options.readyTimeoutMs, message: `${name} ready` });
    } catch (error) {
      if (!(error instanceof WaitTimeoutError)) throw error;
      child.kill('SIGKILL');
      throw new Error(
        `${name} was not ready within ${this.options.readyTimeoutMs} ms:\n${this.output()}`,
      );
    }
  }

  /** Sends `signal` (default SIGTERM) and waits for the exit; SIGKILL after `timeoutMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> {
    const child = this.child;
    if (!child || !this.running) return child?.exitCode ?? null;
    if (signal !== 'SIGKILL') child.kill('SIGCONT');
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const code = await this.exited;
    clearTimeout(timer);
    this.unregister();
    return code;
  }

  /** SIGKILL, as a crash. */
  kill(): Promise<number | null> {
    return this.stop('SIGKILL');
  }

  /** Freezes (SIGSTOP) or thaws (SIGCONT) the process. */
  signal(signal: 'SIGSTOP' | 'SIGCONT'): void {
    this.child?.kill(signal);
  }

  /** Starts it again on the same port with the same environment. */
  async restart(): Promise<void> {
    await this.stop();
    await this.launch();
  }
}

/** The Redis the e2e global setup resolved (it exports REDIS_URL), else the local default. */
export function defaultRedisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/**
 * The repository root: the nearest folder above this file holding `nest-cli.json` (works from
 * the sources and from the compiled tools in `.tools/`).
 */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'nest-cli.json'))) {
    const parent = dirname(dir);
    if (parent === dir)
      throw new Error('cannot find the repository root (no nest-cli.json above this file)');
    dir = parent;
  }
  return dir;
}
