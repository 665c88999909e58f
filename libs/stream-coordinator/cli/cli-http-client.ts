import { isProtocolErrorBody } from '@redis-stream-coordinator/nestjs/protocol';
import { CliConnectionError, CliHttpError } from './cli.errors.js';

/** Where and how the CLI talks to the coordinator. */
export interface CliConnection {
  /** Base URL without a trailing slash. */
  readonly baseUrl: string;
  readonly token: string | undefined;
  readonly timeoutMs: number;
}

/** A successful response: status and parsed JSON body (`undefined` for 204). */
export interface CliResponse<T> {
  readonly status: number;
  readonly body: T;
}

/**
 * The coordinator's HTTP API for the CLI. Errors become {@link CliHttpError} (with the protocol
 * error code and message, and a hint for 401/403) or {@link CliConnectionError}.
 */
export class CliHttpClient {
  constructor(private readonly connection: CliConnection) {}

  get<T>(path: string): Promise<CliResponse<T>> {
    return this.request<T>('GET', path);
  }

  /** A request with an optional JSON body. */
  async request<T>(method: string, path: string, body?: unknown): Promise<CliResponse<T>> {
    const { baseUrl, token, timeoutMs } = this.connection;
    let res: Response;
    try {
      res = await fetch(`${baseUrl}${path}`, {
        method,
        headers: {
          accept: 'application/json',
          ...(token ? { authorization: `Bearer ${token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (error) {
      throw new CliConnectionError(
        `cannot reach the coordinator at ${baseUrl} (${describe(error)}); check COORDINATOR_URL or --url`,
      );
    }
    const text = await res.text().catch(() => '');
    let parsed: unknown;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.ok) return { status: res.status, body: parsed as T };
    const where = `${method} ${path}`;
    if (isProtocolErrorBody(parsed)) {
      const { code, message } = parsed.error;
      const hint =
        res.status === 401
          ? ' (set COORDINATOR_ADMIN_TOKEN, COORDINATOR_TOKEN or COORDINATOR_VIEWER_TOKEN, or pass --token)'
          : res.status === 403
            ? ' (this command needs an admin token: COORDINATOR_ADMIN_TOKEN)'
            : '';
      throw new CliHttpError(
        res.status,
        code,
        `${where} failed: ${res.status} ${code}: ${message}${hint}`,
      );
    }
    throw new CliHttpError(
      res.status,
      null,
      `${where} failed: HTTP ${res.status}${text ? `: ${text.slice(0, 200)}` : ''}`,
    );
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    if (error.name === 'TimeoutError') return 'no answer in time';
    const cause = (error as { cause?: unknown }).cause;
    if (cause instanceof Error) {
      const code = (cause as { code?: unknown }).code;
      return typeof code === 'string' ? `${code}: ${cause.message}` : cause.message;
    }
    return error.message;
  }
  return String(error);
}
