import 'reflect-metadata';
import { connect } from 'node:net';
import { resolve } from 'node:path';
import { Controller, Get, Module } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { ProtocolErrorBody } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCoordinatorApp } from '../../apps/coordinator/src/bootstrap.js';
import { CoordinatorStartup } from '../../apps/coordinator/src/coordinator-startup.js';
import {
  type CoordinatorConfig,
  loadCoordinatorConfig,
} from '../../apps/coordinator/src/config/coordinator-config.js';
import { registeredRoutes } from '../../apps/coordinator/src/http/http-edge.js';
import {
  type ApiResponse,
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';
import { pollUntil } from '../support/wait.js';
import { heartbeat, joinRequest, useCoordinator } from './support/coordinator-fixture.js';

/**
 * The coordinator's HTTP edge (docs/operations.md "Security", docs/protocol.md §2.2, §2.6):
 * authentication before the body is read, deny by default, the viewer and metrics tokens, bounded
 * work (MAX_GROUPS, per-address rate limit of unauthenticated requests, overload shedding).
 */

const METRICS_TOKEN = 'test-metrics-token-0123';

/** Sends raw bytes; resolves the first response's text (head and as much body as arrived). */
function rawExchange(
  port: number,
  bytes: string,
  timeoutMs = 5000,
): Promise<{ text: string; ms: number }> {
  return new Promise((resolveExchange, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    let text = '';
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no response within ${timeoutMs} ms; got ${JSON.stringify(text)}`));
    }, timeoutMs);
    const finish = (): void => {
      clearTimeout(timer);
      socket.destroy();
      resolveExchange({ text, ms: Date.now() - started });
    };
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      const head = text.indexOf('\r\n\r\n');
      const length = /content-length: (\d+)/i.exec(text)?.[1];
      if (head >= 0 && length !== undefined && text.length >= head + 4 + Number(length)) finish();
    });
    socket.on('close', finish);
    socket.on('error', () => undefined);
    socket.write(bytes);
  });
}

/** Opens a connection, writes `bytes` and resolves how long the server took to close it. */
function closedAfter(port: number, bytes: string, timeoutMs = 10_000): Promise<number> {
  return new Promise((resolveClose, reject) => {
    const started = Date.now();
    const socket = connect(port, '127.0.0.1');
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for ${timeoutMs} ms`));
    }, timeoutMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolveClose(Date.now() - started);
    });
    socket.on('error', () => undefined);
    socket.on('data', () => undefined);
    if (bytes.length > 0) socket.write(bytes);
  });
}

describe('reject before reading: auth before the body, body limit, timeouts', () => {
  const fx = useCoordinator('edge-read', { REQUEST_TIMEOUT_MS: '1500' });
  const port = (): number => Number(new URL(fx.coordinator().url).port);

  it('an unauthenticated request declaring a 100 MiB body gets 401 without sending it', async () => {
    const { text, ms } = await rawExchange(
      port(),
      'POST /v1/groups/g/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        'Content-Length: 104857600\r\n\r\n',
    );
    expect(text).toMatch(/^HTTP\/1\.1 401 /);
    expect(text).toContain('"UNAUTHENTICATED"');
    expect(ms).toBeLessThan(2000);
  });

  it('an authenticated request declaring a body over 1 MiB gets 413 without sending it', async () => {
    const { text } = await rawExchange(
      port(),
      'POST /v1/groups/g/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${TEST_TOKENS.member}\r\nContent-Length: ${1024 * 1024 + 1}\r\n\r\n`,
    );
    expect(text).toMatch(/^HTTP\/1\.1 413 /);
    expect(text).toContain('"PAYLOAD_TOO_LARGE"');
  });

  it('a request whose body never arrives, or a silent connection, is closed after REQUEST_TIMEOUT_MS', async () => {
    const slow = closedAfter(
      port(),
      'POST /v1/groups/g/heartbeat HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
        `Authorization: Bearer ${TEST_TOKENS.member}\r\nContent-Length: 100\r\n\r\n{"memberId"`,
    );
    const silent = closedAfter(port(), '');
    for (const ms of await Promise.all([slow, silent])) {
      expect(ms).toBeGreaterThanOrEqual(1000);
      expect(ms).toBeLessThan(8000);
    }
  });
});

describe('deny by default: every registered route has an access decision', () => {
  const redis = useRedisPrefix('edge-routes');
  let config: CoordinatorConfig;
  let app: NestFastifyApplication;

  beforeAll(async () => {
    config = loadCoordinatorConfig({
      REDIS_URL: redisUrl(),
      KEY_PREFIX: redis.prefix,
      HOST: '127.0.0.1',
      COORDINATOR_TOKEN: TEST_TOKENS.member,
      COORDINATOR_ADMIN_TOKEN: TEST_TOKENS.admin,
      COORDINATOR_VIEWER_TOKEN: TEST_TOKENS.viewer,
      METRICS_TOKEN,
      LOG_LEVEL: 'error',
      AUTH_RATE_LIMIT_MAX: '0',
    });
    app = await createCoordinatorApp(config);
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
  });

  it('enumerates every route: each one is public or needs a role, and the hook enforces it', async () => {
    const routes = registeredRoutes(app.getHttpAdapter().getInstance());
    expect(routes.length).toBeGreaterThan(15);
    const undecided = routes.filter((r) => r.access === undefined);
    expect(undecided, 'routes with no access decision').toEqual([]);
    const publicRoutes = routes.filter((r) => r.access && 'public' in r.access).map((r) => r.url);
    expect(new Set(publicRoutes)).toEqual(
      new Set(['/health/live', '/health/ready', '/docs', '/docs/openapi.json', '/ui']),
    );
    for (const route of routes) {
      if (!route.access || 'public' in route.access) continue;
      const url = route.url.replace(/:[A-Za-z]+/g, 'x');
      const anonymous = await app.inject({ method: route.method as 'GET', url });
      expect(anonymous.statusCode, `${route.method} ${route.url} without a token`).toBe(401);
      const role = route.access.role;
      if (role === 'admin' || role === 'member' || role === 'metrics') {
        const viewer = await app.inject({
          method: route.method as 'GET',
          url,
          headers: { authorization: `Bearer ${TEST_TOKENS.viewer}` },
        });
        expect(viewer.statusCode, `${route.method} ${route.url} with a viewer token`).toBe(403);
      }
    }
  });

  it('decides by the route the router found, not the raw URL: encoded paths, HEAD, 404s', async () => {
    await app.get(CoordinatorStartup).completed();
    // find-my-way decodes `%68` to `h`: `/%68ealth/ready` is the health route, the raw URL is not
    for (const url of ['/%68ealth/ready', '/health/%72eady', '/%68ealth/live']) {
      const anonymous = await app.inject({ method: 'GET', url });
      expect([url, anonymous.statusCode, anonymous.json()]).toEqual([url, 200, { status: 'ok' }]);
    }
    for (const [method, url] of [
      ['GET', '/v1/%67roups'],
      ['GET', '/v1/groups?role=admin'],
      ['HEAD', '/v1/groups'],
      ['GET', '/%6detrics'],
      ['HEAD', '/metrics'],
      ['GET', '/v1/streams/orders%2Fdead-letters'],
    ] as const) {
      expect([method, url, (await app.inject({ method, url })).statusCode]).toEqual([
        method,
        url,
        401,
      ]);
    }
    // a 404 under /health is no health answer: the protocol's error body, like any other 404
    for (const url of ['/health/ready/', '/healthz']) {
      const missing = await app.inject({ method: 'GET', url });
      expect([url, missing.statusCode, missing.json()]).toEqual([
        url,
        404,
        { error: { code: 'NOT_FOUND', message: 'no such route' } },
      ]);
    }
  });

  it('a controller whose route declares nothing stops the start, naming the route', async () => {
    @Controller('forgotten')
    class ForgottenController {
      @Get('secret')
      secret(): string {
        return 'leaked';
      }
    }
    @Module({ controllers: [ForgottenController] })
    class ForgottenModule {}
    const broken = await createCoordinatorApp(config, { imports: [ForgottenModule] });
    try {
      await expect(broken.init()).rejects.toThrow(/GET \/forgotten\/secret declares no access/);
    } finally {
      await broken.close().catch(() => undefined);
    }
  });
});

describe('roles: viewer reads, member heartbeats, admin writes; /metrics behind METRICS_TOKEN', () => {
  const fx = useCoordinator('edge-roles', { STREAMS: 'orders:2', METRICS_TOKEN });
  const viewer = (): CoordinatorApi => fx.admin().as(TEST_TOKENS.viewer);

  it('a viewer token reads the API and the dashboard data but changes nothing', async () => {
    expect((await heartbeat(fx.member(), 'g', joinRequest('a', ['orders']))).status).toBe(200);
    for (const path of [
      '/v1/groups',
      '/v1/groups/g',
      '/v1/groups/g/events',
      '/v1/streams',
      '/v1/streams/orders',
      '/ui/api/overview',
      '/ui/api/groups/g',
    ]) {
      expect((await viewer().get(path)).status, path).toBe(200);
    }
    const refused = [
      await heartbeat<ProtocolErrorBody>(viewer(), 'g', joinRequest('v', ['orders'])),
      await viewer().post<ProtocolErrorBody>('/v1/groups/g/leave', {
        memberId: 'a',
        memberEpoch: -1,
      }),
      await viewer().delete<ProtocolErrorBody>('/v1/groups/g/members/a'),
      await viewer().delete<ProtocolErrorBody>('/v1/groups/g'),
      await viewer().put<ProtocolErrorBody>('/v1/streams/more', { shards: 2 }),
    ];
    for (const res of refused)
      expect([res.status, res.body.error.code]).toEqual([403, 'FORBIDDEN']);
    expect(
      (await fx.admin().get<{ members: unknown[] }>('/v1/groups/g')).body.members,
    ).toHaveLength(1);
  });

  it('/metrics needs METRICS_TOKEN (or an admin token) once it is set', async () => {
    const anonymous = fx.admin().as(null);
    expect((await anonymous.get('/metrics')).status).toBe(401);
    expect((await viewer().get('/metrics')).status).toBe(403);
    const scrape = await fx.admin().as(METRICS_TOKEN).get<string>('/metrics');
    expect(scrape.status).toBe(200);
    expect(scrape.body).toContain('# TYPE');
    expect((await fx.admin().get('/metrics')).status).toBe(200);
    // the metrics token is good for nothing else
    expect((await fx.admin().as(METRICS_TOKEN).get('/v1/groups')).status).toBe(403);
  });
});

describe('bounded work: MAX_GROUPS and the rate limit of unauthenticated requests', () => {
  const fx = useCoordinator('edge-bounds', {
    STREAMS: 'orders:2',
    MAX_GROUPS: '2',
    AUTH_RATE_LIMIT_MAX: '30',
    AUTH_RATE_LIMIT_WINDOW_MS: '60000',
  });

  it('a join that would create group MAX_GROUPS + 1 is 409 MAX_GROUPS_REACHED; existing groups still join', async () => {
    for (const g of ['g1', 'g2']) {
      expect((await heartbeat(fx.member(), g, joinRequest('a', ['orders']))).status).toBe(200);
    }
    const third = await heartbeat<ProtocolErrorBody>(
      fx.member(),
      'g3',
      joinRequest('a', ['orders']),
    );
    expect([third.status, third.body.error.code]).toEqual([409, 'MAX_GROUPS_REACHED']);
    expect(third.body.error.message).toContain('MAX_GROUPS');
    expect((await fx.admin().get('/v1/groups/g3')).status).toBe(404);
    expect((await heartbeat(fx.member(), 'g1', joinRequest('b', ['orders']))).status).toBe(200);
    // after a delete there is room again
    expect((await fx.admin().delete('/v1/groups/g2/members/a')).status).toBe(204);
    expect((await fx.admin().delete('/v1/groups/g2')).status).toBe(204);
    expect((await heartbeat(fx.member(), 'g3', joinRequest('a', ['orders']))).status).toBe(200);
  });

  it('concurrent joins creating groups on one replica never overshoot MAX_GROUPS', async () => {
    // g1 and g3 exist (the test before): make room for exactly one more
    expect((await fx.admin().delete('/v1/groups/g3/members/a')).status).toBe(204);
    expect((await fx.admin().delete('/v1/groups/g3')).status).toBe(204);
    const joins = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        heartbeat<ProtocolErrorBody>(fx.member(), `burst-${i}`, joinRequest('a', ['orders'])),
      ),
    );
    const statuses = joins.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 409)).toHaveLength(23);
    const listed = await fx.admin().get<{ groups: { groupId: string }[] }>('/v1/groups');
    expect(listed.body.groups).toHaveLength(2);
    // a refused join left nothing: no group, no event log
    const refusedId = `burst-${joins.findIndex((r) => r.status === 409)}`;
    expect((await fx.admin().get(`/v1/groups/${refusedId}`)).status).toBe(404);
    expect((await fx.admin().get(`/v1/groups/${refusedId}/events`)).status).toBe(404);
  });

  it('requests without a valid token are limited per address (429 + Retry-After); valid tokens are not', async () => {
    const intruder = fx.admin().as('not-a-token-of-this-coordinator');
    let limited: ApiResponse<ProtocolErrorBody> | undefined;
    for (let i = 0; i < 40 && !limited; i++) {
      const res = await intruder.get<ProtocolErrorBody>('/v1/groups');
      if (res.status === 429) limited = res;
      else expect(res.status).toBe(401);
    }
    if (!limited) throw new Error('no request was rate limited');
    expect(limited.body.error.code).toBe('RATE_LIMITED');
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    // anonymous calls from the same address share the budget, but liveness is never limited
    // (a kubelet probing from that address must not restart the coordinator); token holders
    // are unaffected
    expect((await fx.admin().as(null).get('/health/ready')).status).toBe(429);
    expect((await fx.admin().as(null).get('/health/live')).status).toBe(200);
    expect((await fx.member().get('/v1/groups')).status).toBe(200);
    expect((await heartbeat(fx.member(), 'g1', { memberId: 'b', memberEpoch: 1 })).status).not.toBe(
      429,
    );
  });
});

describe('rate limit key: the socket address unless TRUST_PROXY names the proxy', () => {
  const redis = useRedisPrefix('edge-xff');
  let app: NestFastifyApplication;

  beforeAll(async () => {
    app = await createCoordinatorApp(
      loadCoordinatorConfig({
        REDIS_URL: redisUrl(),
        KEY_PREFIX: redis.prefix,
        HOST: '127.0.0.1',
        COORDINATOR_TOKEN: TEST_TOKENS.member,
        LOG_LEVEL: 'error',
        AUTH_RATE_LIMIT_MAX: '3',
        AUTH_RATE_LIMIT_WINDOW_MS: '60000',
      }),
    );
    await app.init();
  });
  afterAll(async () => {
    await app?.close();
  });

  it('a new X-Forwarded-For per request does not renew the budget when TRUST_PROXY is off', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await app.inject({
        method: 'GET',
        url: '/v1/groups',
        headers: { 'x-forwarded-for': `203.0.113.${i + 1}`, authorization: 'Bearer wrong' },
      });
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    // a valid token is never counted, whatever the address spent
    const member = await app.inject({
      method: 'GET',
      url: '/v1/groups',
      headers: { authorization: `Bearer ${TEST_TOKENS.member}` },
    });
    expect(member.statusCode).not.toBe(429);
  });
});

describe('overload: 503 + Retry-After instead of growing latency', () => {
  const redis = useRedisPrefix('edge-overload');
  let coordinator: CoordinatorProcess;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      entry: resolve(import.meta.dirname, 'fixtures/event-loop-blocker-coordinator.mjs'),
      env: { OVERLOAD_MAX_EVENT_LOOP_DELAY_MS: '50' },
    });
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('sheds requests while the event loop lags, keeps liveness up, and recovers', async () => {
    const admin = new CoordinatorApi(coordinator.url, TEST_TOKENS.admin);
    expect((await admin.post('/test-fixture/block?ms=200&forMs=4000', {})).status).toBe(202);
    const shed = await pollUntil(
      () => admin.get<ProtocolErrorBody>('/v1/groups'),
      (r) => r.status === 503,
      { message: 'a request to be shed', timeoutMs: 6000, intervalMs: 20 },
    );
    expect(shed.body.error.code).toBe('COORDINATOR_NOT_AVAILABLE');
    expect(Number(shed.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await admin.get('/health/live')).status).toBe(200);
    await pollUntil(
      () => admin.get('/v1/groups'),
      (r) => r.status === 200,
      { message: 'requests to be served again', timeoutMs: 10_000, intervalMs: 100 },
    );
  });
});
