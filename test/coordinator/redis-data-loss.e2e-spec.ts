import type {
  HeartbeatResponse,
  StreamRouting,
  StreamShards,
} from '@redis-stream-coordinator/nestjs/protocol';
import { connectRedis } from '../support/redis-client.js';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { type RestartableRedis, startRestartableRedis } from '../support/redis-processes.js';
import { uniquePrefix } from '../support/redis.js';
import { heartbeat, joinRequest } from './support/coordinator-fixture.js';
import { parsePrometheusText, sampleValue } from './support/prometheus-text.js';
import { evaluate, loadAlertRules } from '../support/alert-rules.js';
import { waitForNoProblems } from '../support/wait.js';

interface ReadyBody {
  details?: Record<
    string,
    { status: string; losses?: number; restoredStreams?: string[]; warning?: string }
  >;
}

const RULES = loadAlertRules();

/**
 * The shipped alert rules (docker/prometheus/alerts.yml, docs/operations.md section 9) evaluated
 * against one scrape of `/metrics`, for one group: whether each expression holds. Their `for: 5m`
 * is not waited out; the test instead checks the expression on every scrape for as long as the
 * condition lasts (so it would fire once it lasted 5 minutes) and that it clears after the heal.
 */
async function alerts(
  url: string,
  group: string,
): Promise<{ withoutOwner: boolean; ownsNothing: boolean; dataLosses: number }> {
  const res = await new CoordinatorApi(url, null).get<string>('/metrics');
  const m = parsePrometheusText(res.body);
  const active = (name: string): boolean => {
    const rule = RULES.get(name);
    if (!rule) throw new Error(`no alert ${name} in docker/prometheus/alerts.yml`);
    return evaluate(rule.expr, m).some((s) => s.labels.group === group);
  };
  return {
    withoutOwner: active('ShardsWithoutOwner'),
    ownsNothing: active('GroupOwnsNothing'),
    dataLosses: sampleValue(m, 'rsc_coordinator_redis_data_loss_total', {}) ?? 0,
  };
}

/**
 * Redis loses its data under a running coordinator: the incarnation marker tells it, it says so
 * (log, `/health/ready`, metric) and creates again every stream of its catalog — the one created
 * through the API too — under the next routing epoch; the group's members re-join and get their
 * shards without any restart. While a group owns nothing, the documented alert condition holds.
 */
describe('Redis lost its data', () => {
  let redis: RestartableRedis | undefined;
  let coordinator: CoordinatorProcess | undefined;
  let client: Redis | undefined;
  afterEach(async () => {
    await coordinator?.stop();
    coordinator = undefined;
    client?.disconnect();
    client = undefined;
    await redis?.dispose();
    redis = undefined;
  });

  it('is detected, restores the catalog, and the group owns its shards again', async () => {
    redis = await startRestartableRedis();
    client = connectRedis(redis.url, { maxRetriesPerRequest: 2 });
    const prefix = uniquePrefix('data-loss');
    coordinator = await CoordinatorProcess.start({
      prefix,
      redisUrl: redis.url,
      env: { STREAMS: 'orders:2', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '5000' },
    });
    const url = coordinator.url;
    const admin = new CoordinatorApi(url, TEST_TOKENS.admin);
    expect((await admin.put('/v1/streams/audit', { shards: 3 })).status).toBe(201);
    const member = new CoordinatorApi(url, TEST_TOKENS.member);
    // One member driven by hand: it heartbeats, re-joins when the coordinator no longer knows it
    // (UNKNOWN_MEMBER_ID), and reports what it was assigned.
    let epoch = 0;
    let owned: StreamShards[] = [];
    const beat = async (): Promise<void> => {
      const res = await heartbeat(
        member,
        'billing',
        epoch === 0
          ? joinRequest('m1', ['audit'])
          : { memberId: 'm1', memberEpoch: epoch, ownedShards: owned },
      );
      const body = res.body as HeartbeatResponse & { error?: { code?: string } };
      if (res.status === 409 && body.error?.code === 'UNKNOWN_MEMBER_ID') {
        epoch = 0;
        owned = [];
        return;
      }
      if (res.status !== 200) return;
      epoch = body.memberEpoch;
      if (body.assignment) owned = body.assignment.shards;
    };
    const held = (): number => owned.reduce((n, e) => n + e.shards.length, 0);
    const converged = async (): Promise<string[]> => {
      await beat();
      const a = await alerts(url, 'billing');
      const problems = held() === 3 ? [] : [`${held()} shards held`];
      if (a.withoutOwner) problems.push('shards without owner');
      if (a.ownsNothing) problems.push('group owns nothing');
      return problems;
    };
    await waitForNoProblems(converged, {
      timeoutMs: 15_000,
      message: 'the group owns the 3 shards of audit',
      intervalMs: 100,
      retryErrors: true,
    });

    // A group whose stream is missing (what members re-joining after a loss find until it is
    // restored): it owns nothing and the "group owns nothing" alert condition holds (the stream
    // has no shards, so none is "unassigned"); once the stream exists, it clears.
    const lone = await heartbeat<HeartbeatResponse>(
      member,
      'ledger',
      joinRequest('l1', ['ledger']),
    );
    expect(lone.status).toBe(200);
    for (let i = 0; i < 3; i++) expect((await alerts(url, 'ledger')).ownsNothing).toBe(true);
    expect((await admin.put('/v1/streams/ledger', { shards: 2 })).status).toBe(201);
    await waitForNoProblems(
      async () => {
        const res = await heartbeat<HeartbeatResponse>(member, 'ledger', {
          memberId: 'l1',
          memberEpoch: lone.body.memberEpoch,
        });
        const a = await alerts(url, 'ledger');
        return res.status === 200 && !a.ownsNothing && !a.withoutOwner ? [] : [JSON.stringify(a)];
      },
      {
        timeoutMs: 15_000,
        message: 'the ledger group owns its shards, no alert',
        intervalMs: 100,
        retryErrors: true,
      },
    );
    await heartbeat(member, 'ledger', { memberId: 'l1', memberEpoch: -1 });

    // A FLUSHALL: the incarnation marker is gone. Every stream of the catalog comes back by
    // itself, the one created through the API and the declared one, under their next routing
    // epoch; the member, unknown now, re-joins and owns its shards again.
    await client.flushall();
    await waitForNoProblems(
      async () => {
        const problems = await converged();
        for (const stream of ['orders', 'audit', 'ledger']) {
          const res = await admin.get<StreamRouting>(`/v1/streams/${stream}`);
          if (res.status !== 200) problems.push(`${stream} ${res.status}`);
        }
        return problems;
      },
      {
        timeoutMs: 15_000,
        message: 'every stream is back after FLUSHALL and the group owns audit again',
        intervalMs: 100,
        retryErrors: true,
      },
    );
    const audit = await admin.get<StreamRouting>('/v1/streams/audit');
    expect(audit.body.shards).toHaveLength(3);
    expect(audit.body.routingEpoch).toBe(2);
    expect((await admin.get<StreamRouting>('/v1/streams/orders')).body.routingEpoch).toBe(2);
    const ready = await new CoordinatorApi(url).get<ReadyBody>('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body.details?.redisData).toMatchObject({
      status: 'up',
      losses: 1,
      restoredStreams: ['audit', 'ledger', 'orders'],
    });
    expect(ready.body.details?.redisData?.warning).toMatch(/Redis lost data/);
    expect((await alerts(url, 'billing')).dataLosses).toBe(1);
    expect(coordinator.output()).toMatch(/Redis lost its data \(the incarnation marker is gone/);
  });
});
