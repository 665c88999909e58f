import { describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import { heartbeat, joinRequest, ok, useCoordinator } from './support/coordinator-fixture.js';
import { parsePrometheusText, type PromFamily, sampleValue } from './support/prometheus-text.js';
import { pollUntil } from '../support/wait.js';

type Json = Record<string, unknown>;
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

/** Routes the coordinator actually mapped, from Nest's startup log: `GET /v1/groups/{groupId}`. */
function mappedRoutes(output: string): Set<string> {
  const routes = new Set<string>();
  for (const m of output.matchAll(/Mapped \{(\S+), (\w+)\} route/g)) {
    const [, path = '', method = ''] = m;
    routes.add(`${method.toUpperCase()} ${path.replace(/:(\w+)/g, '{$1}')}`);
  }
  return routes;
}

/** Resolves a local `#/...` JSON pointer in `doc`. */
function resolveRef(doc: Json, ref: string): unknown {
  expect(ref.startsWith('#/')).toBe(true);
  let node: unknown = doc;
  for (const part of ref.slice(2).split('/'))
    node = (node as Json | undefined)?.[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  return node;
}

/** Every `$ref` anywhere under `node`. */
function refsIn(node: unknown, out: string[] = []): string[] {
  if (Array.isArray(node)) for (const n of node) refsIn(n, out);
  else if (node && typeof node === 'object') {
    for (const [k, v] of Object.entries(node)) {
      if (k === '$ref' && typeof v === 'string') out.push(v);
      else refsIn(v, out);
    }
  }
  return out;
}

describe('/docs, /health and /metrics', () => {
  const fx = useCoordinator('docs-health', {
    STREAMS: 'orders:4',
    LOG_LEVEL: 'log',
    SESSION_TIMEOUT_MS: '120000',
  });

  it('/docs serves a valid OpenAPI 3.1 document listing every route with its method', async () => {
    const res = await new CoordinatorApi(fx.coordinator().url, null).get<Json>('/docs');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/json');
    const doc = res.body;
    expect(doc.openapi).toMatch(/^3\.1\.\d+$/);
    const info = doc.info as Json;
    expect(typeof info.title).toBe('string');
    expect(typeof info.version).toBe('string');
    const paths = doc.paths as Record<string, Record<string, Json>>;
    const schemes = ((doc.components as Json).securitySchemes ?? {}) as Json;

    const documented = new Set<string>();
    const operationIds = new Set<string>();
    for (const [path, item] of Object.entries(paths)) {
      expect(path.startsWith('/')).toBe(true);
      const templated = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      for (const [method, op] of Object.entries(item)) {
        expect(METHODS).toContain(method);
        documented.add(`${method.toUpperCase()} ${path}`);
        // Every templated parameter is declared, in: path, required.
        const params = (op.parameters ?? []) as Json[];
        for (const name of templated) {
          const p = params.find((x) => x.name === name && x.in === 'path');
          expect(p, `${method} ${path} declares {${name}}`).toBeDefined();
          expect(p?.required).toBe(true);
        }
        for (const p of params) expect(['path', 'query', 'header', 'cookie']).toContain(p.in);
        // Responses: at least one, keyed by status code, each with a description.
        const responses = op.responses as Record<string, Json>;
        expect(Object.keys(responses).length).toBeGreaterThan(0);
        for (const [status, r] of Object.entries(responses)) {
          expect(status).toMatch(/^([1-5]\d\d|[1-5]XX|default)$/);
          expect(typeof r.description).toBe('string');
        }
        for (const s of (op.security ?? []) as Json[])
          for (const name of Object.keys(s)) expect(schemes[name]).toBeDefined();
        if (typeof op.operationId === 'string') {
          expect(operationIds.has(op.operationId)).toBe(false);
          operationIds.add(op.operationId);
        }
        // /v1 and the dashboard's data routes need a token and say so; health, metrics, docs and
        // the dashboard page itself do not.
        if (path.startsWith('/v1/') || path.startsWith('/ui/api/'))
          expect(op.security).toBeDefined();
        else expect(op.security).toBeUndefined();
      }
    }
    for (const ref of refsIn(doc)) expect(resolveRef(doc, ref), ref).toBeDefined();

    const mapped = mappedRoutes(fx.coordinator().output());
    expect(mapped.size).toBeGreaterThan(10);
    const served = [...mapped].filter((r) => !r.includes(' /docs'));
    expect(
      served.filter((r) => !documented.has(r)),
      'routes served but not documented',
    ).toEqual([]);
    expect(
      [...documented].filter((r) => !mapped.has(r)),
      'routes documented but not served',
    ).toEqual([]);
    expect(
      (await new CoordinatorApi(fx.coordinator().url, null).get<Json>('/docs/openapi.json')).body,
    ).toEqual(doc);
  });

  it('/health/live and /health/ready answer 200 with no token; details only with one', async () => {
    const anonymous = new CoordinatorApi(fx.coordinator().url, null);
    const live = await anonymous.get<Json>('/health/live');
    expect(live.status).toBe(200);
    expect(live.body.status).toBe('ok');
    expect((await anonymous.get('/health/ready')).body).toEqual({ status: 'ok' });
    const ready = await anonymous.as(TEST_TOKENS.member).get<{
      status: string;
      details: Record<string, { status: string }>;
    }>('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.status).toBe('ok');
    expect(Object.keys(ready.body.details).sort()).toEqual([
      'coordinator',
      'keyLayout',
      'persistence',
      'redis',
      'redisData',
    ]);
    for (const d of Object.values(ready.body.details)) expect(d.status).toBe('up');
  });

  it('/metrics parses as Prometheus text and has the coordinator families with sensible values', async () => {
    const api = fx.member();
    const g = 'g-metrics';
    const scrape = async (): Promise<Map<string, PromFamily>> => {
      const res = await new CoordinatorApi(fx.coordinator().url, null).get<string>('/metrics');
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
      return parsePrometheusText(res.body);
    };
    const shards = (m: Map<string, PromFamily>): Record<string, number | undefined> =>
      Object.fromEntries(
        ['assigned', 'unassigned', 'pending_revocation', 'awaiting_release'].map((status) => [
          status,
          sampleValue(m, 'rsc_coordinator_shards', { group: g, status }),
        ]),
      );

    // a owns all four; b joins and a is told to revoke two.
    await ok(api, g, joinRequest('a', ['orders']));
    const b = await ok(api, g, joinRequest('b', ['orders']));
    const revoke = await ok(api, g, { memberId: 'a', memberEpoch: 1 });
    const kept = revoke.assignment?.shards[0]?.shards ?? [];
    let m = await scrape();
    for (const [name, type] of [
      ['rsc_coordinator_group_epoch', 'gauge'],
      ['rsc_coordinator_assignment_epoch', 'gauge'],
      ['rsc_coordinator_members', 'gauge'],
      ['rsc_coordinator_shards', 'gauge'],
      ['rsc_coordinator_rebalances_total', 'counter'],
      ['rsc_coordinator_heartbeats_total', 'counter'],
      ['rsc_coordinator_heartbeat_duration_seconds', 'histogram'],
      ['rsc_coordinator_assignor_duration_seconds', 'histogram'],
    ] as const) {
      expect({ name, type: m.get(name)?.type }).toEqual({ name, type });
      expect(m.get(name)?.help.length).toBeGreaterThan(0);
    }
    expect(sampleValue(m, 'rsc_coordinator_group_epoch', { group: g })).toBe(2);
    expect(sampleValue(m, 'rsc_coordinator_assignment_epoch', { group: g })).toBe(2);
    expect(sampleValue(m, 'rsc_coordinator_members', { group: g, state: 'UNREVOKED_SHARDS' })).toBe(
      1,
    );
    expect(
      sampleValue(m, 'rsc_coordinator_members', { group: g, state: 'UNRELEASED_SHARDS' }),
    ).toBe(1);
    expect(sampleValue(m, 'rsc_coordinator_members', { group: g, state: 'STABLE' })).toBe(0);
    expect(shards(m)).toEqual({
      assigned: 2,
      unassigned: 0,
      pending_revocation: 2,
      awaiting_release: 2,
    });
    expect(sampleValue(m, 'rsc_coordinator_rebalances_total', { group: g, reason: 'join' })).toBe(
      2,
    );
    expect(b.diff.awaitingRelease[0]?.shards).toHaveLength(2);

    // a acknowledges: the two are free (unassigned) until b takes them.
    await ok(api, g, {
      memberId: 'a',
      memberEpoch: 1,
      ownedShards: [{ stream: 'orders', shards: kept }],
    });
    m = await scrape();
    expect(shards(m)).toEqual({
      assigned: 2,
      unassigned: 2,
      pending_revocation: 0,
      awaiting_release: 0,
    });
    await ok(api, g, { memberId: 'b', memberEpoch: 2 });
    // One fenced heartbeat and one malformed one.
    expect((await heartbeat(api, g, { memberId: 'a', memberEpoch: 9 })).status).toBe(409);
    expect((await heartbeat(api, g, { memberId: 'a', memberEpoch: -7 })).status).toBe(400);
    m = await scrape();
    expect(shards(m)).toEqual({
      assigned: 4,
      unassigned: 0,
      pending_revocation: 0,
      awaiting_release: 0,
    });
    expect(sampleValue(m, 'rsc_coordinator_members', { group: g, state: 'STABLE' })).toBe(2);
    expect(sampleValue(m, 'rsc_coordinator_heartbeats_total', { group: g, outcome: 'ok' })).toBe(5);
    expect(
      sampleValue(m, 'rsc_coordinator_heartbeats_total', {
        group: g,
        outcome: 'FENCED_MEMBER_EPOCH',
      }),
    ).toBe(1);
    expect(
      sampleValue(m, 'rsc_coordinator_heartbeats_total', { group: '', outcome: 'INVALID_REQUEST' }),
    ).toBe(1);
    const served = (m.get('rsc_coordinator_heartbeats_total')?.samples ?? []).reduce(
      (n, s) => n + s.value,
      0,
    );
    expect(sampleValue(m, 'rsc_coordinator_heartbeat_duration_seconds_count')).toBe(served);
    const seconds = sampleValue(m, 'rsc_coordinator_heartbeat_duration_seconds_sum') ?? -1;
    expect(seconds).toBeGreaterThan(0);
    expect(seconds / served).toBeLessThan(1);
    expect(
      sampleValue(m, 'rsc_coordinator_assignor_duration_seconds_count', { assignor: 'uniform' }),
    ).toBeGreaterThanOrEqual(2);
    expect(
      sampleValue(m, 'rsc_coordinator_assignor_duration_seconds_sum', { assignor: 'uniform' }),
    ).toBeLessThan(1);
    // No member ids or shard ids as labels.
    for (const family of m.values())
      for (const s of family.samples) expect(Object.keys(s.labels)).not.toContain('member');
  });
});

describe('/health/ready during shutdown', () => {
  const redis = useRedisPrefix('health-shutdown');

  it('turns 503 for the SHUTDOWN_GRACE_MS grace period after SIGTERM, then the process exits', async () => {
    const coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { SHUTDOWN_GRACE_MS: '1500' },
    });
    const anonymous = new CoordinatorApi(coordinator.url, null);
    expect((await anonymous.get('/health/ready')).status).toBe(200);
    const sent = Date.now();
    const stopped = coordinator.stop('SIGTERM');
    const during = await pollUntil(
      () =>
        anonymous.as(TEST_TOKENS.member).get<{
          status: string;
          details: Record<string, { status: string; reason?: string }>;
        }>('/health/ready'),
      (r) => r.status === 503,
      { timeoutMs: 1400, intervalMs: 20, message: 'readiness to turn 503' },
    );
    expect(Date.now() - sent).toBeLessThan(1400);
    expect(during.body.details.coordinator).toEqual({ status: 'down', reason: 'shutting down' });
    // Liveness still answers while draining; the process then exits cleanly after the grace period.
    expect((await anonymous.get('/health/live')).status).toBe(200);
    // Nest re-raises the signal after its shutdown hooks: the exit is by SIGTERM, not the helper's
    // SIGKILL (sent only after 15 s), and only once the grace period is over.
    const code = await stopped;
    const took = Date.now() - sent;
    expect(code === 0 || code === null, `exit code ${code}`).toBe(true);
    expect(took).toBeGreaterThanOrEqual(1400);
    expect(took).toBeLessThan(10_000);
    expect(coordinator.output()).not.toContain('ERROR');
  });
});
