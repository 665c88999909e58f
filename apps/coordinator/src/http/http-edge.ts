import rateLimit from '@fastify/rate-limit';
import underPressure from '@fastify/under-pressure';
import {
  PROTOCOL_ERROR_STATUS,
  PROTOCOL_LIMITS,
  type ProtocolErrorBody,
  type ProtocolErrorCode,
} from '@redis-stream-coordinator/nestjs/protocol';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { type ApiRole, ROUTE_ACCESS, type RouteAccess } from './roles.decorator.js';
import { TokenMatcher } from './token-matcher.js';

/** The largest valid request body (docs/protocol.md §2.6); the HTTP server reads no more. */
export const MAX_BODY_BYTES = PROTOCOL_LIMITS.maxBodyBytes;

/** Fastify server options of the edge: body limit and timeouts. */
export function edgeServerOptions(config: CoordinatorConfig): {
  bodyLimit: number;
  connectionTimeout: number;
  requestTimeout: number;
  keepAliveTimeout: number;
} {
  return {
    bodyLimit: MAX_BODY_BYTES,
    // an idle socket (no bytes either way) is closed after this long
    connectionTimeout: config.requestTimeoutMs,
    // a request must have arrived in full by then (slow senders)
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: Math.min(config.requestTimeoutMs, 65_000),
  };
}

/** A caller that presented a valid token, by the strongest role it holds. */
type CallerRole = Exclude<ApiRole, 'metrics'> | 'metrics';

const RANK: Record<Exclude<ApiRole, 'metrics'>, number> = { viewer: 0, member: 1, admin: 2 };

/** A registered route and what it needs (for the route audit in the tests). */
export interface RouteDecision {
  readonly method: string;
  readonly url: string;
  readonly access: RouteAccess | undefined;
}

/** Thrown at start by a route that declares neither a role nor `@Public()`. */
export class UndecidedRouteError extends Error {
  constructor(method: string, url: string) {
    super(
      `route ${method} ${url} declares no access: add @RequireRole(...) or @Public() (apps/coordinator/src/http/roles.decorator.ts)`,
    );
    this.name = 'UndecidedRouteError';
  }
}

const routesByInstance = new WeakMap<FastifyInstance, RouteDecision[]>();

/** Every route registered on `fastify` so far, with its access decision. */
export function registeredRoutes(fastify: FastifyInstance): readonly RouteDecision[] {
  return routesByInstance.get(fastify) ?? [];
}

/** Who made a request, once the `onRequest` hook has authenticated it. */
const callers = new WeakMap<FastifyRequest, CallerRole>();

/** The role a request authenticated with, or `undefined` (no or no valid token). */
export function callerRole(request: FastifyRequest): CallerRole | undefined {
  return callers.get(request);
}

/**
 * Hardens the Fastify instance before Nest adds its routes (docs/protocol.md §2.2):
 * - deny by default: a route without a decision stops the start ({@link UndecidedRouteError});
 * - authentication in `onRequest`, before the body is read: 401/403 cost no body buffering;
 * - requests without a valid token are rate limited per client address (429 + `Retry-After`);
 * - overload (event-loop delay) is answered 503 + `Retry-After` instead of growing latency;
 * - health details only for authenticated callers.
 */
export function hardenHttp(fastify: FastifyInstance, config: CoordinatorConfig): void {
  const routes: RouteDecision[] = [];
  routesByInstance.set(fastify, routes);
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const access = (route.config as Record<string, unknown> | undefined)?.[ROUTE_ACCESS] as
      RouteAccess | undefined;
    for (const method of [route.method].flat()) {
      routes.push({ method, url: route.url, access });
      if (access === undefined) throw new UndecidedRouteError(method, route.url);
    }
  });

  if (config.authRateLimitMax > 0) {
    void fastify.register(rateLimit, {
      global: false,
      max: config.authRateLimitMax,
      timeWindow: config.authRateLimitWindowMs,
    });
  }
  if (config.overloadMaxEventLoopDelayMs > 0) {
    void fastify.register(underPressure, {
      maxEventLoopDelay: config.overloadMaxEventLoopDelayMs,
      pressureHandler: (request, reply) => {
        // liveness stays up under load: a restart would only add to it
        if (routeUrl(request) === '/health/live') return;
        sendError(reply, 'COORDINATOR_NOT_AVAILABLE', 'the coordinator is overloaded; retry later');
      },
    });
  }

  const authenticate = authenticator(config);
  let limiter: ReturnType<FastifyInstance['createRateLimit']> | undefined;
  /** False when the caller is over its budget of unauthenticated requests (429 sent). */
  const withinBudget = async (request: FastifyRequest, reply: FastifyReply): Promise<boolean> => {
    if (config.authRateLimitMax === 0) return true;
    limiter ??= fastify.createRateLimit();
    const outcome = await limiter(request);
    if (outcome.isAllowed || !outcome.isExceeded) return true;
    void reply.header('Retry-After', String(Math.max(1, outcome.ttlInSeconds)));
    void reply.header('Connection', 'close');
    sendError(
      reply,
      'RATE_LIMITED',
      `too many requests without a valid token from this address; retry after ${Math.max(1, outcome.ttlInSeconds)} s`,
    );
    return false;
  };

  fastify.addHook('onRequest', async (request, reply) => {
    const access = (request.routeOptions.config as unknown as Record<string, unknown>)[
      ROUTE_ACCESS
    ] as RouteAccess | undefined;
    const caller = authenticate(request.headers.authorization);
    if (caller !== null) callers.set(request, caller);
    let needed: ApiRole | null = access && 'role' in access ? access.role : null;
    if (needed === 'metrics' && config.metricsTokens.length === 0) needed = null;
    if (needed === null) {
      // Public (or no such route): budgeted when the caller has no valid token, except liveness:
      // a flood from an address the kubelet shares must not get the coordinator restarted.
      if (routeUrl(request) === '/health/live') return;
      if (caller === null && !(await withinBudget(request, reply))) return reply;
      return;
    }
    if (caller === null) {
      if (!(await withinBudget(request, reply))) return reply;
      const presented = request.headers.authorization !== undefined;
      // closing (instead of draining an unread body to keep the connection) costs nothing more
      void reply.header('Connection', 'close');
      sendError(
        reply,
        'UNAUTHENTICATED',
        presented
          ? 'the bearer token is not valid'
          : 'missing bearer token: send "Authorization: Bearer <token>"',
      );
      return reply;
    }
    if (!allows(caller, needed)) {
      sendError(reply, 'FORBIDDEN', forbiddenMessage(needed));
      return reply;
    }
    return;
  });

  fastify.addHook('onSend', async (request, _reply, payload) => {
    if (!isHealthRoute(request) || callers.has(request)) return payload;
    return publicHealthBody(payload);
  });
}

/**
 * The pattern of the route the router matched (`/v1/groups/:groupId`), `undefined` for a 404.
 * Decisions read this, never `request.url`: the router decodes the path (`/%68ealth/ready` is
 * `/health/ready`), the raw URL does not.
 */
export function routeUrl(request: FastifyRequest): string | undefined {
  return request.routeOptions.url;
}

/** True for a request the router gave to one of the `/health/*` routes. */
export function isHealthRoute(request: FastifyRequest): boolean {
  return routeUrl(request)?.startsWith('/health/') === true;
}

/** Maps an `Authorization` header to the strongest role it proves, or null. */
function authenticator(
  config: CoordinatorConfig,
): (header: string | string[] | undefined) => CallerRole | null {
  if (config.auth === 'none') return () => 'admin';
  const admins = new TokenMatcher(config.adminTokens);
  const members = new TokenMatcher(config.memberTokens);
  const viewers = new TokenMatcher(config.viewerTokens);
  const scrapers = new TokenMatcher(config.metricsTokens);
  return (header) => {
    const match = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
    if (!match?.[1]) return null;
    // one hash per request, checked against every role (constant time either way)
    const presented = TokenMatcher.digest(match[1]);
    const isAdmin = admins.matchesDigest(presented);
    const isMember = members.matchesDigest(presented);
    const isViewer = viewers.matchesDigest(presented);
    const isScraper = scrapers.matchesDigest(presented);
    if (isAdmin) return 'admin';
    if (isMember) return 'member';
    if (isViewer) return 'viewer';
    if (isScraper) return 'metrics';
    return null;
  };
}

function allows(caller: CallerRole, needed: ApiRole): boolean {
  if (needed === 'metrics') return caller === 'metrics' || caller === 'admin';
  if (caller === 'metrics') return false;
  return RANK[caller] >= RANK[needed];
}

function forbiddenMessage(needed: ApiRole): string {
  switch (needed) {
    case 'admin':
      return 'this route needs an admin token (COORDINATOR_ADMIN_TOKEN)';
    case 'member':
      return 'this route needs a member or admin token (COORDINATOR_TOKEN, COORDINATOR_ADMIN_TOKEN)';
    case 'metrics':
      return 'this route needs the metrics token (METRICS_TOKEN) or an admin token';
    default:
      return 'this route needs a viewer, member or admin token';
  }
}

function sendError(reply: FastifyReply, code: ProtocolErrorCode, message: string): void {
  const body: ProtocolErrorBody = { error: { code, message } };
  if (code === 'COORDINATOR_NOT_AVAILABLE') void reply.header('Retry-After', '1');
  void reply
    .status(PROTOCOL_ERROR_STATUS[code])
    .header('Content-Type', 'application/json')
    .send(JSON.stringify(body));
}

/** A health body reduced to its `status` (details name Redis errors, hosts and key layouts). */
function publicHealthBody(payload: unknown): unknown {
  if (typeof payload !== 'string') return payload;
  try {
    const parsed = JSON.parse(payload) as { status?: unknown };
    return JSON.stringify({ status: parsed.status });
  } catch {
    return payload;
  }
}
