import { type ChildProcess, fork } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onProcessExit, type Unregister } from '../../test/support/process-cleanup.js';
import { BenchTimeoutError } from './stats.js';

/** A message between the runner and a bench worker process (IPC, JSON). */
export interface BenchMessage {
  readonly type: string;
  readonly [field: string]: unknown;
}

/** Options of {@link BenchChild.start}. */
export interface BenchChildOptions {
  /** Worker script name under `bench/workers/` without extension, e.g. `raw-consumer`. */
  readonly worker: string;
  /** Extra environment (merged over the runner's). */
  readonly env?: Readonly<Record<string, string>>;
  /** Node flags, e.g. `['--cpu-prof', '--cpu-prof-dir=…']`. */
  readonly execArgv?: readonly string[];
  /** Name in error messages. */
  readonly name?: string;
  /** The `node` binary to run it on (`--node=`); the runner's own when absent. */
  readonly execPath?: string;
  /** Receives every message from the start (also those sent before `ready`). */
  readonly listener?: (message: BenchMessage) => void;
}

const WORKERS_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'workers');

/** A bench worker process exited before it sent what was awaited. */
export class BenchChildExitedError extends Error {
  override readonly name = 'BenchChildExitedError';

  constructor(name: string, code: number | null, signal: string | null, output: string) {
    super(
      `benchmark worker ${name} exited (code ${code}, signal ${signal}):\n${output.slice(-4000)}`,
    );
  }
}

/**
 * A bench worker (`.tools/bench/workers/<worker>.js`) run as a child process with an IPC channel:
 * the runner sends commands, the worker answers with typed messages. Killed at the latest when
 * the runner exits.
 */
export class BenchChild {
  private readonly listeners = new Set<(message: BenchMessage) => void>();
  private readonly logs: string[] = [];
  private exitInfo: { code: number | null; signal: string | null } | null = null;
  private readonly exited: Promise<void>;
  private readonly unregister: Unregister;

  private constructor(
    private readonly child: ChildProcess,
    readonly name: string,
  ) {
    const collect = (chunk: Buffer): void => {
      this.logs.push(chunk.toString());
      if (this.logs.length > 400) this.logs.splice(0, 200);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    child.on('message', (message: BenchMessage) => {
      for (const listener of this.listeners) listener(message);
    });
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        this.exitInfo = { code, signal };
        for (const listener of this.listeners) listener({ type: '__exit' });
        resolve();
      }),
    );
    this.unregister = onProcessExit(() => {
      if (this.exitInfo === null) child.kill('SIGKILL');
    });
  }

  /** Starts a worker and waits for its `ready` message. */
  static async start(options: BenchChildOptions, readyTimeoutMs = 30_000): Promise<BenchChild> {
    const script = join(WORKERS_DIR, `${options.worker}.js`);
    const child = fork(script, [], {
      env: { ...process.env, ...options.env },
      execArgv: [...(options.execArgv ?? [])],
      ...(options.execPath ? { execPath: options.execPath } : {}),
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      serialization: 'advanced',
    });
    const worker = new BenchChild(child, options.name ?? options.worker);
    if (options.listener) worker.on(options.listener);
    await worker.next('ready', readyTimeoutMs);
    return worker;
  }

  /** Process id. */
  get pid(): number {
    return this.child.pid ?? -1;
  }

  /** Whether it still runs. */
  get running(): boolean {
    return this.exitInfo === null;
  }

  /** What it printed (the recent part). */
  output(): string {
    return this.logs.join('');
  }

  /** Sends a command. */
  send(message: BenchMessage): void {
    if (this.exitInfo === null) this.child.send(message);
  }

  /** Calls `listener` for every message until the returned function is called. */
  on(listener: (message: BenchMessage) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves with the next message of `type` (matching `accept`), rejects on exit or timeout. */
  next(
    type: string,
    timeoutMs: number,
    accept: (m: BenchMessage) => boolean = () => true,
  ): Promise<BenchMessage> {
    return new Promise((resolve, reject) => {
      const check = (): boolean => {
        if (this.exitInfo === null) return false;
        off();
        clearTimeout(timer);
        reject(
          new BenchChildExitedError(
            this.name,
            this.exitInfo.code,
            this.exitInfo.signal,
            this.output(),
          ),
        );
        return true;
      };
      const off = this.on((message) => {
        if (message.type === '__exit') {
          check();
          return;
        }
        if (message.type === 'error') {
          off();
          clearTimeout(timer);
          reject(new Error(`benchmark worker ${this.name} failed: ${String(message.message)}`));
          return;
        }
        if (message.type !== type || !accept(message)) return;
        off();
        clearTimeout(timer);
        resolve(message);
      });
      const timer = setTimeout(() => {
        off();
        reject(
          new BenchTimeoutError(
            `"${type}" from ${this.name}\n${this.output().slice(-2000)}`,
            timeoutMs,
          ),
        );
      }, timeoutMs);
      check();
    });
  }

  /** Sends `command` and resolves with the reply of type `reply`. */
  async request(command: BenchMessage, reply: string, timeoutMs = 60_000): Promise<BenchMessage> {
    const answer = this.next(reply, timeoutMs);
    this.send(command);
    return answer;
  }

  /** Resident set size in KiB (from /proc), or NaN when it cannot be read. */
  rssKb(): number {
    return readRssKb(this.pid);
  }

  /** Sends `signal` and waits for the exit (SIGKILL after `timeoutMs`). */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<void> {
    if (this.exitInfo !== null) return;
    this.child.kill(signal);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), timeoutMs);
    await this.exited;
    clearTimeout(timer);
    this.unregister();
  }

  /** Sends a signal without waiting. */
  signal(signal: NodeJS.Signals): void {
    if (this.exitInfo === null) this.child.kill(signal);
  }

  /** Resolves when the process has exited. */
  whenExited(): Promise<void> {
    return this.exited;
  }
}

/** VmRSS of `pid` in KiB from /proc, or NaN. */
export function readRssKb(pid: number): number {
  try {
    const match = /VmRSS:\s+(\d+)\s+kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : Number.NaN;
  } catch {
    return Number.NaN;
  }
}

/** CPU time (user + system) used so far by `pid`, in µs (from /proc; 10 ms resolution), or NaN. */
export function readCpuUs(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields[11] = utime, fields[12] = stime (clock ticks, 100 per second on Linux)
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}
