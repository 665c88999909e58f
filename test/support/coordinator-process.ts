import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from './free-port.js';
import { onProcessExit, type Unregister } from './process-cleanup.js';
import { redisUrl } from './redis.js';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
/** The built coordinator entry point (`npm run build` makes it; `npm test` builds first). */
export const COORDINATOR_MAIN = resolve(ROOT, 'apps/coordinator/dist/main.js');

/** Tokens every test coordinator is started with. */
export const TEST_TOKENS = { member: 'test-member-token', admin: 'test-admin-token' } as const;

/** Options of {@link CoordinatorProcess.start}. */
export interface CoordinatorProcessOptions {
  /** KEY_PREFIX: use the test's unique prefix. */
  readonly prefix: string;
  readonly redisUrl?: string;
  readonly port?: number;
  /** Extra environment (HEARTBEAT_INTERVAL_MS, SESSION_TIMEOUT_MS, STREAMS, ...). */
  readonly env?: Readonly<Record<string, string>>;
  /** How long to wait for `/health/ready`. Default 20 s. */
  readonly readyTimeoutMs?: number;
}

/**
 * The real coordinator (`apps/coordinator/dist/main.js`) as a child process on a free port,
 * configured only by the environment. Stopped by the test (`stop`/`kill`); anything left is
 * killed when the test process exits.
 */
export class CoordinatorProcess {
  private child: ChildProcess | null = null;
  private exited: Promise<number | null> = Promise.resolve(null);
  private unregister: Unregister = () => {};
  private logs: string[] = [];

  private constructor(
    readonly port: number,
    private readonly env: NodeJS.ProcessEnv,
    private readonly readyTimeoutMs: number,
  ) {}

  /** Starts a coordinator and waits until it is ready. */
  static async start(options: CoordinatorProcessOptions): Promise<CoordinatorProcess> {
    if (!existsSync(COORDINATOR_MAIN)) {
      throw new Error(`${COORDINATOR_MAIN} is missing: run "npm run build" first (npm test does)`);
    }
    const port = options.port ?? (await freePort());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      REDIS_URL: options.redisUrl ?? redisUrl(),
      KEY_PREFIX: options.prefix,
      COORDINATOR_TOKEN: TEST_TOKENS.member,
      COORDINATOR_ADMIN_TOKEN: TEST_TOKENS.admin,
      LOG_LEVEL: 'warn',
      ...options.env,
    };
    const coordinator = new CoordinatorProcess(port, env, options.readyTimeoutMs ?? 20_000);
    await coordinator.launch();
    return coordinator;
  }

  /** Base URL, e.g. `http://127.0.0.1:54321`. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Process id of the running child (undefined once it exited). */
  get pid(): number | undefined {
    return this.child?.pid;
  }

  /** Everything the process printed so far. */
  output(): string {
    return this.logs.join('');
  }

  private async launch(): Promise<void> {
    const child = spawn(process.execPath, [COORDINATOR_MAIN], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    const collect = (chunk: Buffer): void => {
      this.logs.push(chunk.toString());
      if (this.logs.length > 2000) this.logs.splice(0, 1000);
    };
    child.stdout?.on('data', collect);
    child.stderr?.on('data', collect);
    this.exited = new Promise((resolveExit) => child.once('exit', (code) => resolveExit(code)));
    this.unregister = onProcessExit(() => {
      if (child.exitCode === null) child.kill('SIGKILL');
    });
    await this.waitReady(child);
  }

  private async waitReady(child: ChildProcess): Promise<void> {
    const deadline = Date.now() + this.readyTimeoutMs;
    let exited = false;
    void this.exited.then(() => {
      exited = true;
    });
    while (Date.now() < deadline) {
      if (exited || child.exitCode !== null) {
        throw new Error(`coordinator exited with code ${child.exitCode} before it was ready:\n${this.output()}`);
      }
      try {
        const res = await fetch(`${this.url}/health/ready`, { signal: AbortSignal.timeout(1000) });
        if (res.status === 200) return;
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, 50));
    }
    child.kill('SIGKILL');
    throw new Error(`coordinator was not ready within ${this.readyTimeoutMs} ms:\n${this.output()}`);
  }

  /** Sends `signal` (default SIGTERM) and waits for the exit; SIGKILL after `timeoutMs`. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', timeoutMs = 15_000): Promise<number | null> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return child?.exitCode ?? null;
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

/** A response of {@link CoordinatorApi}. */
export interface ApiResponse<T = unknown> {
  readonly status: number;
  readonly body: T;
  readonly headers: Headers;
}

/** A tiny typed HTTP client for the coordinator API in tests. */
export class CoordinatorApi {
  constructor(
    readonly baseUrl: string,
    readonly token: string | null = TEST_TOKENS.admin,
  ) {}

  /** The same API with another token (or none). */
  as(token: string | null): CoordinatorApi {
    return new CoordinatorApi(this.baseUrl, token);
  }

  async request<T = unknown>(
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ): Promise<ApiResponse<T>> {
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers: {
        ...(this.token ? { authorization: `Bearer ${this.token}` } : {}),
        ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        ...headers,
      },
      ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    if (text.length > 0 && (res.headers.get('content-type') ?? '').includes('json')) parsed = JSON.parse(text);
    return { status: res.status, body: parsed as T, headers: res.headers };
  }

  get<T = unknown>(path: string): Promise<ApiResponse<T>> {
    return this.request<T>('GET', path);
  }

  post<T = unknown>(path: string, body: unknown): Promise<ApiResponse<T>> {
    return this.request<T>('POST', path, body);
  }

  put<T = unknown>(path: string, body: unknown): Promise<ApiResponse<T>> {
    return this.request<T>('PUT', path, body);
  }

  delete<T = unknown>(path: string): Promise<ApiResponse<T>> {
    return this.request<T>('DELETE', path);
  }
}
