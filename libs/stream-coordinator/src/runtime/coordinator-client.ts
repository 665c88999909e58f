import { CoordinatorRequestError } from '../errors/runtime/coordinator-request.error.js';
import {
  type HeartbeatRequest,
  type HeartbeatResponse,
  isProtocolErrorBody,
  type LeaveResponse,
  type ProtocolErrorCode,
  type StreamRouting,
} from '../protocol/index.js';
import type { RoutingSource } from '../interfaces/routing-source.interface.js';

/** Connection settings of {@link CoordinatorClient}. */
export interface CoordinatorClientOptions {
  /** Base URL without trailing slash. */
  readonly baseUrl: string;
  readonly token: string;
  /** Per-request timeout. */
  readonly requestTimeoutMs: number;
}

/**
 * The coordinator's HTTP API as the member runtime and the producer use it. Protocol errors come
 * back as {@link CoordinatorRequestError} with the code; network failures and timeouts as the
 * same error with `code: null`.
 */
export class CoordinatorClient implements RoutingSource {
  constructor(private readonly options: CoordinatorClientOptions) {}

  /** `POST /v1/groups/{groupId}/heartbeat`. */
  heartbeat(groupId: string, body: HeartbeatRequest): Promise<HeartbeatResponse | LeaveResponse> {
    return this.call('POST', `/v1/groups/${encodeURIComponent(groupId)}/heartbeat`, body);
  }

  /** `POST /v1/groups/{groupId}/member-ids`: a coordinator-issued member id. */
  async issueMemberId(groupId: string): Promise<string> {
    const res = await this.call<{ memberId: string }>(
      'POST',
      `/v1/groups/${encodeURIComponent(groupId)}/member-ids`,
      {},
    );
    return res.memberId;
  }

  /** `GET /v1/streams/{stream}`: routing metadata. */
  fetchRouting(stream: string): Promise<StreamRouting> {
    return this.call('GET', `/v1/streams/${encodeURIComponent(stream)}`);
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.options.baseUrl}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${this.options.token}`,
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
        signal: AbortSignal.timeout(this.options.requestTimeoutMs),
      });
    } catch (error) {
      throw new CoordinatorRequestError(null, 0, `${method} ${path} failed: ${describe(error)}`);
    }
    const text = await res.text().catch(() => '');
    let parsed: unknown;
    try {
      parsed = text.length > 0 ? JSON.parse(text) : undefined;
    } catch {
      parsed = undefined;
    }
    if (res.ok) return parsed as T;
    if (isProtocolErrorBody(parsed)) {
      throw new CoordinatorRequestError(
        parsed.error.code as ProtocolErrorCode,
        res.status,
        parsed.error.message,
      );
    }
    throw new CoordinatorRequestError(null, res.status, `${method} ${path} answered ${res.status}`);
  }
}

function describe(error: unknown): string {
  if (error instanceof Error) {
    const cause = (error as { cause?: unknown }).cause;
    return cause instanceof Error ? `${error.message} (${cause.message})` : error.message;
  }
  return String(error);
}
