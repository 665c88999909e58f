import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ProtocolErrorBody } from '@redis-stream-coordinator/nestjs/protocol';
import {
  type ApiResponse,
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import { type RestartableRedis, startRestartableRedis } from '../support/redis-processes.js';
import {
  describeGroup,
  heartbeat,
  joinRequest,
  ok,
  snapshotKeys,
  useCoordinator,
} from './support/coordinator-fixture.js';
import { pollUntil } from '../support/wait.js';
import {
  BAD_AUTHORIZATION,
  BAD_INPUT,
  type BadCase,
  CHECK_ORDER,
  HB,
  RESHARD_INPUT,
  type Route,
  ROUTES,
} from './bad-input.cases.js';

/** Bodies this large go headers first ({@link sendHeadersFirst}); the server refuses over 1 MiB. */
const LARGE_BODY = 64 * 1024;

function send(base: string, c: BadCase): Promise<ApiResponse<ProtocolErrorBody>> {
  const adminRoute =
    c.method === 'PUT' ||
    c.method === 'DELETE' ||
    c.path.endsWith('/reshard') ||
    c.path.endsWith('/dead-letters/replay') ||
    c.path.endsWith('/dead-letters/purge');
  const token = c.token === undefined ? (adminRoute ? 'admin' : 'member') : c.token;
  const raw = token === null ? null : typeof token === 'object' ? token.raw : TEST_TOKENS[token];
  const headers: Record<string, string> = {
    ...(raw !== null ? { authorization: `Bearer ${raw}` } : {}),
    ...c.headers,
  };
  if (typeof c.body === 'string' && c.body.length > LARGE_BODY) {
    return sendHeadersFirst(`${base}${c.path}`, c.method, headers, Buffer.from(c.body));
  }
  return new CoordinatorApi(base, null).request<ProtocolErrorBody>(
    c.method,
    c.path,
    c.body,
    headers,
  );
}

/**
 * Sends `body` (declared by `Content-Length`) after the headers, only if no answer came within a
 * second: a server refusing on the headers alone (a bad token, a forbidden route, a declared size
 * over its limit) answers at once and closes, and a client still writing would turn that close
 * into EPIPE or a reset that hides the answer (seen in CI on Node 24 for "bad token + oversized
 * body → 401").
 */
function sendHeadersFirst(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: Buffer,
): Promise<ApiResponse<ProtocolErrorBody>> {
  return new Promise((resolveRes, reject) => {
    let answered = false;
    const req = httpRequest(url, {
      method,
      headers: {
        'content-type': 'application/json',
        ...headers,
        'content-length': String(body.length),
      },
    });
    req.on('response', (res) => {
      answered = true;
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => {
        try {
          const answer = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === 'string') answer.set(name, value);
          }
          resolveRes({
            status: res.statusCode ?? 0,
            body: JSON.parse(text) as ProtocolErrorBody,
            headers: answer,
          });
        } catch (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
        }
        req.destroy();
      });
    });
    req.on('error', (error) => {
      if (!answered) reject(error);
    });
    req.flushHeaders();
    const CHUNK = 64 * 1024;
    let sent = 0;
    const pump = (): void => {
      while (!answered && sent < body.length) {
        const n = Math.min(CHUNK, body.length - sent);
        const ok = req.write(body.subarray(sent, sent + n));
        sent += n;
        if (!ok) {
          req.once('drain', pump);
          return;
        }
      }
      if (!answered) req.end();
    };
    setTimeout(pump, 1000).unref();
  });
}

describe('bad input, auth and check order (every route)', () => {
  const fx = useCoordinator('bad-input', { STREAMS: 'orders:4', SESSION_TIMEOUT_MS: '600000' });
  let reshardRoute = false;

  beforeAll(async () => {
    await ok(fx.member(), 'g', joinRequest('m1', ['orders']));
    const probe = await fx
      .admin()
      .post<ProtocolErrorBody>('/v1/streams/no-such-stream/reshard', { shards: 2 });
    reshardRoute = !(probe.status === 404 && probe.body.error.code === 'NOT_FOUND');
  });

  /** Sends a refused request and checks status, code, message, and that no state changed. */
  async function expectRefused(c: BadCase): Promise<void> {
    const redisBefore = await snapshotKeys(fx.redis(), fx.prefix);
    const describedBefore = await describeGroup(fx.admin(), 'g');
    const res = await send(fx.coordinator().url, c).catch((error: unknown) => {
      // A body over the limit is refused on its Content-Length alone, and the server closes the
      // connection after its 413 (RFC 9110 section 15.5.14 allows it): a client still writing the body
      // may then see EPIPE/ECONNRESET instead of the response (seen on Node 22's fetch). That is
      // a refusal too; the state checks below still apply. Any other failure is a failure.
      const code = (error as { cause?: { code?: string } }).cause?.code;
      if (c.status === 413 && (code === 'EPIPE' || code === 'ECONNRESET')) return undefined;
      throw error;
    });
    if (res === undefined) {
      expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(redisBefore);
      expect(await describeGroup(fx.admin(), 'g')).toEqual(describedBefore);
      return;
    }
    expect(
      { status: res.status, code: res.body?.error?.code },
      JSON.stringify(res.body).slice(0, 500),
    ).toEqual({ status: c.status, code: c.code });
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(Object.keys(res.body.error).sort()).toEqual(['code', 'message']);
    expect(res.body.error.message.length).toBeGreaterThan(0);
    for (const m of c.mentions ?? []) expect(res.body.error.message).toContain(m);
    expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(redisBefore);
    expect(await describeGroup(fx.admin(), 'g')).toEqual(describedBefore);
  }

  describe('bad input → 400/413 naming the field, no state change', () => {
    for (const c of BAD_INPUT) it(c.name, () => expectRefused(c));
  });

  describe('reshard route input', () => {
    for (const c of RESHARD_INPUT) {
      it(c.name, async (ctx) => {
        // The reshard route belongs to the resharding work; skipped (and reported) while absent.
        if (!reshardRoute) ctx.skip();
        await expectRefused(c);
      });
    }
  });

  describe('docs/protocol.md §2.4 check order', () => {
    for (const c of CHECK_ORDER) it(c.name, () => expectRefused(c));
  });

  describe('authentication and roles', () => {
    const presentRoutes = (): Route[] =>
      ROUTES.filter((r) => reshardRoute || !r.path.endsWith('/reshard'));

    it('every /v1 route refuses a missing or wrong token with 401 UNAUTHENTICATED and changes nothing', async () => {
      const before = await snapshotKeys(fx.redis(), fx.prefix);
      for (const route of presentRoutes()) {
        for (const [label, headers] of BAD_AUTHORIZATION) {
          const res = await new CoordinatorApi(
            fx.coordinator().url,
            null,
          ).request<ProtocolErrorBody>(route.method, route.path, route.body, headers);
          expect({
            route: `${route.method} ${route.path}`,
            label,
            status: res.status,
            code: res.body?.error?.code,
          }).toEqual({
            route: `${route.method} ${route.path}`,
            label,
            status: 401,
            code: 'UNAUTHENTICATED',
          });
        }
      }
      expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(before);
    });

    it('a member token on an admin route is 403 FORBIDDEN and changes nothing', async () => {
      const before = await snapshotKeys(fx.redis(), fx.prefix);
      for (const route of presentRoutes().filter((r) => r.admin)) {
        const res = await fx
          .member()
          .request<ProtocolErrorBody>(route.method, route.path, route.body);
        expect({
          route: `${route.method} ${route.path}`,
          status: res.status,
          code: res.body.error.code,
        }).toEqual({ route: `${route.method} ${route.path}`, status: 403, code: 'FORBIDDEN' });
      }
      expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(before);
    });

    it('member and admin tokens both work on member routes', async () => {
      for (const route of presentRoutes().filter((r) => !r.admin)) {
        for (const api of [fx.member(), fx.admin()]) {
          const res = await api.request<ProtocolErrorBody>(route.method, route.path, route.body);
          expect({ route: `${route.method} ${route.path}`, status: res.status }).not.toMatchObject({
            status: 401,
          });
          expect(res.status, `${route.method} ${route.path} ${JSON.stringify(res.body)}`).not.toBe(
            403,
          );
          if (route.path.endsWith('/leave')) expect(res.body.error.code).toBe('UNKNOWN_MEMBER_ID');
          // no dead letter 1-0: the route answers, and says so
          else if (route.path.endsWith('/dead-letters/1-0'))
            expect(res.body.error.code).toBe('NOT_FOUND');
          else expect(res.status).toBeLessThan(300);
        }
      }
    });

    it('the admin token works on admin routes', async () => {
      const put = await fx.admin().put('/v1/streams/orders', { shards: 4 });
      expect(put.status).toBe(200);
      const del = await fx.admin().delete<ProtocolErrorBody>('/v1/groups/g/members/ghost');
      expect([del.status, del.body.error.code]).toEqual([404, 'UNKNOWN_MEMBER_ID']);
      const group = await fx.admin().delete<ProtocolErrorBody>('/v1/groups/g');
      expect([group.status, group.body.error.code]).toEqual([409, 'GROUP_NOT_EMPTY']);
    });

    it('health, metrics and docs need no token', async () => {
      const anonymous = new CoordinatorApi(fx.coordinator().url, null);
      for (const path of ['/health/live', '/health/ready', '/metrics', '/docs']) {
        expect({ path, status: (await anonymous.get(path)).status }).toEqual({ path, status: 200 });
      }
    });
  });

  it('an unknown route is 404 with the error body', async () => {
    for (const [method, path] of [
      ['GET', '/v1/nope'],
      ['GET', '/nothing/here'],
      ['POST', '/v1/groups'],
      ['PATCH', '/v1/groups/g'],
      ['GET', '/v2/groups'],
    ] as const) {
      const res = await fx
        .admin()
        .request<ProtocolErrorBody>(method, path, method === 'GET' ? undefined : {});
      expect({ method, path, status: res.status }).toEqual({ method, path, status: 404 });
      expect(res.headers.get('content-type')).toContain('application/json');
      expect(Object.keys(res.body)).toEqual(['error']);
      expect(res.body.error.code).toBe('NOT_FOUND');
      expect(typeof res.body.error.message).toBe('string');
    }
  });

  it('a body over the HTTP server limit (16 MiB) gets 413 with the protocol error body', async () => {
    const before = await snapshotKeys(fx.redis(), fx.prefix);
    const res = await sendHeadersFirst(
      `${fx.coordinator().url}${HB}`,
      'POST',
      { authorization: `Bearer ${TEST_TOKENS.member}` },
      Buffer.alloc(17 * 1024 * 1024, 'z'),
    );
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 413,
      code: 'PAYLOAD_TOO_LARGE',
    });
    expect(Object.keys(res.body)).toEqual(['error']);
    expect(await snapshotKeys(fx.redis(), fx.prefix)).toEqual(before);
  });

  it('names and ids at their length limits work, in paths too (URL-encoded)', async () => {
    const group = 'G'.repeat(128);
    const memberId = '%/:?#'.repeat(51);
    expect(memberId).toHaveLength(255);
    const joined = await ok(
      fx.member(),
      group,
      joinRequest(memberId, ['orders'], { instanceId: 'i'.repeat(255), rackId: 'r'.repeat(255) }),
    );
    expect(joined.memberId).toBe(memberId);
    const described = await describeGroup(fx.member(), group);
    expect(described.members.map((m) => m.memberId)).toEqual([memberId]);
    const path = `/v1/groups/${group}/members/${encodeURIComponent(memberId)}`;
    expect(path.length).toBeGreaterThan(765);
    expect((await fx.admin().delete(path)).status).toBe(204);
    expect((await describeGroup(fx.member(), group)).members).toEqual([]);
    expect((await fx.admin().delete(`/v1/groups/${group}`)).status).toBe(204);
  });

  it('JSON content types with parameters or a +json suffix are accepted', async () => {
    for (const contentType of [
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/vnd.rsc+json',
    ]) {
      const res = await fx
        .member()
        .request('POST', HB, JSON.stringify({ memberId: 'm1', memberEpoch: 1 }), {
          'content-type': contentType,
        });
      expect({ contentType, status: res.status }).toEqual({ contentType, status: 200 });
    }
  });

  it('a valid heartbeat still works after all of that (the member is intact)', async () => {
    const res = await heartbeat(fx.member(), 'g', { memberId: 'm1', memberEpoch: 1 });
    expect(res.status).toBe(200);
    expect(res.body.memberEpoch).toBe(1);
  });
});

describe('storage unreachable → 503 COORDINATOR_NOT_AVAILABLE, and recovery', () => {
  const redis = useRedisPrefix('bad-input-503');
  let server: RestartableRedis;
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    server = await startRestartableRedis();
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      redisUrl: server.url,
      env: { STREAMS: 'orders:2', SESSION_TIMEOUT_MS: '60000' },
    });
    api = new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
  });
  afterAll(async () => {
    await coordinator?.stop();
    await server?.dispose();
  });

  it('heartbeat and readiness answer 503 while Redis is down, and recover when it is back', async () => {
    await ok(api, 'g', joinRequest('a', ['orders']));
    await server.stop();

    const started = Date.now();
    const res = await heartbeat<ProtocolErrorBody>(api, 'g', { memberId: 'a', memberEpoch: 1 });
    const took = Date.now() - started;
    expect({ status: res.status, code: res.body.error?.code }).toEqual({
      status: 503,
      code: 'COORDINATOR_NOT_AVAILABLE',
    });
    expect(res.headers.get('retry-after')).toMatch(/^\d+$/);
    // Members must learn quickly (they self-fence on their session timeout).
    expect(took).toBeLessThan(5000);
    const join = await heartbeat<ProtocolErrorBody>(api, 'g', joinRequest('b', ['orders']));
    expect([join.status, join.body.error.code]).toEqual([503, 'COORDINATOR_NOT_AVAILABLE']);
    const described = await api.get<ProtocolErrorBody>('/v1/groups/g');
    expect([described.status, described.body.error.code]).toEqual([
      503,
      'COORDINATOR_NOT_AVAILABLE',
    ]);
    expect(described.headers.get('retry-after')).toMatch(/^\d+$/);

    const ready = await api.get<{
      status: string;
      error?: Record<string, { status: string; reason?: string }>;
      details?: Record<string, { status: string; reason?: string }>;
    }>('/health/ready');
    expect(ready.status).toBe(503);
    const details = ready.body.details ?? {};
    expect(details.redis?.status).toBe('down');
    expect(details.redis?.reason).toMatch(/Redis/);
    expect((await api.get('/health/live')).status).toBe(200);
    // Nothing internal leaks: no Redis error text in error bodies, no health details without a token.
    for (const body of [res.body, join.body, described.body]) {
      expect(body.error.message).not.toMatch(
        /ECONNREFUSED|connect|Connection|127\.0\.0\.1|:\d{2,5}\b/,
      );
    }
    const anonymousReady = await api.as(null).get('/health/ready');
    expect([anonymousReady.status, anonymousReady.body]).toEqual([503, { status: 'error' }]);

    await server.restart();
    await pollUntil(
      () => api.get('/health/ready'),
      (r) => r.status === 200,
      { timeoutMs: 15_000, intervalMs: 100, message: 'readiness after Redis came back' },
    );
    const back = await pollUntil(
      () => heartbeat(api, 'g', { memberId: 'a', memberEpoch: 1 }),
      (r) => r.status === 200,
      {
        timeoutMs: 15_000,
        intervalMs: 100,
        message: 'a heartbeat to succeed after Redis came back',
      },
    );
    expect(back.body.memberEpoch).toBe(1);
    expect((await describeGroup(api, 'g')).members.map((m) => m.memberId)).toEqual(['a']);
  });
});
