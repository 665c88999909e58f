import { resolve } from 'node:path';
import { freePort } from './free-port.js';
import { defaultRedisUrl, ServiceProcess, repoRoot } from './service-process.js';

/** The built coordinator entry point (`npm run build` makes it; `npm test` builds first). */
export const COORDINATOR_MAIN = resolve(repoRoot(), 'apps/coordinator/dist/main.js');

/** Tokens every test coordinator is started with. */
export const TEST_TOKENS = {
  member: 'test-member-token',
  admin: 'test-admin-token',
  viewer: 'test-viewer-token',
} as const;

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
  /** Another built entry point (a fixture that registers custom providers). Default {@link COORDINATOR_MAIN}. */
  readonly entry?: string;
}

/**
 * The real coordinator (`apps/coordinator/dist/main.js`) as a child process on a free port,
 * configured only by the environment, ready once `/health/ready` answers 200.
 */
export class CoordinatorProcess extends ServiceProcess {
  /** Starts a coordinator and waits until it is ready. */
  static async start(options: CoordinatorProcessOptions): Promise<CoordinatorProcess> {
    const port = options.port ?? (await freePort());
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      REDIS_URL: options.redisUrl ?? defaultRedisUrl(),
      KEY_PREFIX: options.prefix,
      COORDINATOR_TOKEN: TEST_TOKENS.member,
      COORDINATOR_ADMIN_TOKEN: TEST_TOKENS.admin,
      COORDINATOR_VIEWER_TOKEN: TEST_TOKENS.viewer,
      LOG_LEVEL: 'warn',
      ...options.env,
    };
    const coordinator = new CoordinatorProcess({
      entry: options.entry ?? COORDINATOR_MAIN,
      env,
      port,
      readyPath: '/health/ready',
      readyTimeoutMs: options.readyTimeoutMs ?? 20_000,
      name: 'coordinator',
    });
    await coordinator.launch();
    return coordinator;
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
      ...(body !== undefined
        ? { body: typeof body === 'string' ? body : JSON.stringify(body) }
        : {}),
      signal: AbortSignal.timeout(10_000),
    });
    const text = await res.text();
    let parsed: unknown = text;
    if (text.length > 0 && (res.headers.get('content-type') ?? '').includes('json'))
      parsed = JSON.parse(text);
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
