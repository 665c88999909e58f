import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess } from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import { CommittedStateSampler } from './support/committed-state-sampler.js';
import { convergenceProblems } from './support/group-checks.js';
import { allEvents, epochBumpProblems, MemberFleet } from './support/member-fleet.js';
import { scrapeMetric } from './support/metrics-scrape.js';
import { allShards } from './support/shard-set.js';
import { pause, waitForNoProblems } from '../support/wait.js';

const GROUP = 'replica-g';
const STREAMS = { orders: 16 } as const;
const CONFLICTS = 'rsc_coordinator_cas_conflicts_total';

/**
 * Two coordinator replicas on one Redis and prefix; members heartbeat to either one at random, at
 * a high rate, while members join, leave and flap, and one replica is SIGKILLed mid-run. The
 * compare-and-set store must lose no update (epochs never go back in any member's view, the
 * event log's epoch bumps are contiguous, an acknowledged leave is never undone), no shard ever has
 * two owners (members' view, committed state, fences), and the survivor converges the group.
 */
describe('two coordinator replicas under a heartbeat hammer', () => {
  const redis = useRedisPrefix('replicas');
  let a: CoordinatorProcess;
  let b: CoordinatorProcess;
  let fleet: MemberFleet;
  let sampler: CommittedStateSampler;

  beforeAll(async () => {
    const options = {
      prefix: redis.prefix,
      env: { STREAMS: 'orders:16', HEARTBEAT_INTERVAL_MS: '200', SESSION_TIMEOUT_MS: '3000' },
    };
    [a, b] = await Promise.all([
      CoordinatorProcess.start(options),
      CoordinatorProcess.start(options),
    ]);
    const replicas = [a.url, b.url];
    fleet = new MemberFleet(GROUP, {
      streams: Object.keys(STREAMS),
      endpoint: () => replicas[Math.floor(Math.random() * replicas.length)] as string,
      maxIntervalMs: 40,
      jitter: 0.7,
      revokeDelayMs: () => Math.floor(Math.random() * 30),
      rebalanceTimeoutMs: 5000,
    });
    sampler = new CommittedStateSampler({
      redis: redis.redis(),
      prefix: redis.prefix,
      groupId: GROUP,
      shards: allShards(STREAMS),
      monitor: fleet.monitor,
    });
  });

  afterAll(async () => {
    await fleet?.dispose();
    await Promise.all([a?.stop(), b?.stop()]);
  });

  it('loses no update and never gives a shard two owners; the survivor converges', async () => {
    sampler.start(10);
    for (const id of ['m1', 'm2', 'm3', 'm4']) fleet.add(id);
    await pause(300);
    fleet.add('m5');
    fleet.add('m6');

    // A member that leaves and rejoins over and over, to either replica.
    let flapping = true;
    let flaps = 0;
    const flapper = (async () => {
      while (flapping) {
        const existing = fleet.members.get('flap');
        if (existing) existing.start();
        else fleet.add('flap');
        await pause(200 + Math.random() * 200);
        await fleet.get('flap').leave();
        flaps++;
        await pause(50 + Math.random() * 150);
      }
    })();

    await pause(1200);
    fleet.add('m7');
    await pause(800);
    await fleet.get('m2').leave();
    await pause(800);
    const conflictsB = await scrapeMetric(b.url, CONFLICTS, { group: GROUP });
    const heartbeatsB = await scrapeMetric(b.url, 'rsc_coordinator_heartbeats_total', {
      group: GROUP,
    });
    await b.kill();
    await pause(500);
    fleet.add('m8');
    await pause(1200);
    flapping = false;
    await flapper;

    const api = new CoordinatorApi(a.url);
    const expected = fleet.runningIds();
    await waitForNoProblems(
      async () => {
        const g = (await api.get<DescribedGroup>(`/v1/groups/${GROUP}`)).body;
        const problems = convergenceProblems(g, { streams: STREAMS, members: expected });
        return problems.length > 0 ? problems : fleet.viewsMatch(g);
      },
      {
        timeoutMs: 15_000,
        message: 'the group converged on the surviving replica',
        retryErrors: true,
      },
    );
    await sampler.stop();

    const conflictsA = await scrapeMetric(a.url, CONFLICTS, { group: GROUP });
    const heartbeatsA = await scrapeMetric(a.url, 'rsc_coordinator_heartbeats_total', {
      group: GROUP,
    });
    const events = await allEvents(api, GROUP);
    const totals = fleet.totals();
    console.log(
      `[replicas] CAS conflicts: replica A ${conflictsA}, replica B ${conflictsB} (before its kill); ` +
        `heartbeats A ${heartbeatsA}, B ${heartbeatsB}; flaps=${flaps} events=${events.length} ` +
        `samples=${sampler.samples} monitor updates=${fleet.monitor.updates} totals=${JSON.stringify(totals)}`,
    );

    expect(flaps).toBeGreaterThanOrEqual(5);
    expect(conflictsA + conflictsB).toBeGreaterThan(0);
    expect(epochBumpProblems(events)).toEqual([]);
    expect(sampler.samples).toBeGreaterThan(100);
    expect(sampler.violations).toEqual([]);
    expect(fleet.violations()).toEqual([]);
    // Nobody was removed behind its back: every UNKNOWN_MEMBER_ID would mean a lost member.
    expect(totals.unknown).toBe(0);
  });
});
