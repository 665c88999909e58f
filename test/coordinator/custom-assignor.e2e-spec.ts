import 'reflect-metadata';
import { Injectable } from '@nestjs/common';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DescribedGroup, HeartbeatResponse } from '@redis-stream-coordinator/nestjs/protocol';
import { ActiveStandbyAssignor } from '../../apps/coordinator/src/assignor-plugins/examples/active-standby.assignor.js';
import { ShardAssignorProvider } from '../../apps/coordinator/src/assignor-plugins/shard-assignor-provider.decorator.js';
import { createCoordinatorApp } from '../../apps/coordinator/src/bootstrap.js';
import { CoordinatorStartup } from '../../apps/coordinator/src/coordinator-startup.js';
import {
  loadCoordinatorConfig,
  type CoordinatorConfig,
} from '../../apps/coordinator/src/config/coordinator-config.js';
import { CoordinatorApi, TEST_TOKENS } from '../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';

/** Marked as an assignor but implements nothing of the interface: the bootstrap must refuse it. */
@ShardAssignorProvider()
@Injectable()
class NotAnAssignor {
  readonly label = 'not an assignor';
}

/**
 * A custom server-side assignor registered as a Nest provider (`@ShardAssignorProvider()`) of an
 * in-process coordinator: members naming it get its assignment, describe names it, an unknown
 * name is still refused, and a marked provider that is no assignor fails the bootstrap.
 */
describe('custom assignor provider', () => {
  const redis = useRedisPrefix('custom-asg');
  let app: NestFastifyApplication;
  let api: CoordinatorApi;
  let config: CoordinatorConfig;

  beforeAll(async () => {
    config = loadCoordinatorConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: redisUrl(),
      KEY_PREFIX: redis.prefix,
      COORDINATOR_TOKEN: TEST_TOKENS.member,
      COORDINATOR_ADMIN_TOKEN: TEST_TOKENS.admin,
      STREAMS: 'orders:4,payments:2',
      LOG_LEVEL: 'error',
    });
    app = await createCoordinatorApp(config, { providers: [ActiveStandbyAssignor] });
    await app.listen(0, '127.0.0.1');
    await app.get(CoordinatorStartup).completed();
    api = new CoordinatorApi(
      (await app.getUrl()).replace('[::1]', '127.0.0.1'),
      TEST_TOKENS.member,
    );
  });
  afterAll(async () => {
    await app?.close();
  });

  const join = (memberId: string, assignor: string, streams = ['orders', 'payments']) =>
    api.post<HeartbeatResponse>('/v1/groups/standby/heartbeat', {
      memberId,
      memberEpoch: 0,
      rebalanceTimeoutMs: 10_000,
      subscribedStreams: streams,
      ownedShards: [],
      assignor,
    });

  it('gives members that name it its assignment, and describe shows it as the group assignor', async () => {
    const b = await join('b', ActiveStandbyAssignor.NAME);
    expect(b.status).toBe(200);
    expect(b.body.assignment?.shards.map((e) => [e.stream, e.shards])).toEqual([
      ['orders', [0, 1, 2, 3]],
      ['payments', [0, 1]],
    ]);
    // A member with a smaller id joins: the sticky active member keeps everything, "a" is a standby.
    const a = await join('a', ActiveStandbyAssignor.NAME);
    expect(a.status).toBe(200);
    expect(a.body.assignment?.shards).toEqual([]);
    expect(a.body.diff.awaitingRelease).toEqual([]);
    // b's target is unchanged; its next heartbeat just moves it to the new epoch.
    const bAgain = await api.post<HeartbeatResponse>('/v1/groups/standby/heartbeat', {
      memberId: 'b',
      memberEpoch: b.body.memberEpoch,
    });
    expect(bAgain.body.memberEpoch).toBe(a.body.memberEpoch);
    expect(bAgain.body.assignment).toBeUndefined();
    const described = await api.get<DescribedGroup>('/v1/groups/standby');
    expect(described.body.assignor).toBe('active-standby');
    expect(described.body.state).toBe('STABLE');
    expect(
      described.body.members.map((m) => [m.memberId, m.target.map((e) => e.shards.length)]),
    ).toEqual([
      ['a', []],
      ['b', [4, 2]],
    ]);

    // The active member leaves: the standby takes over every shard at once.
    expect(
      (await api.post('/v1/groups/standby/heartbeat', { memberId: 'b', memberEpoch: -1 })).status,
    ).toBe(200);
    const takeover = await api.post<HeartbeatResponse>('/v1/groups/standby/heartbeat', {
      memberId: 'a',
      memberEpoch: a.body.memberEpoch,
    });
    expect(takeover.body.assignment?.shards.map((e) => e.shards.length)).toEqual([4, 2]);
  });

  it('still refuses an assignor nobody configured with 400 UNSUPPORTED_ASSIGNOR', async () => {
    const res = await join('c', 'no-such-assignor');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ error: { code: 'UNSUPPORTED_ASSIGNOR' } });
    expect(JSON.stringify(res.body)).toContain('active-standby');
  });

  it('fails the bootstrap with a clear error when a marked provider is not an assignor', async () => {
    const broken = await createCoordinatorApp(config, { providers: [NotAnAssignor] });
    try {
      await expect(broken.init()).rejects.toThrow(
        /NotAnAssignor is marked @ShardAssignorProvider\(\) but does not implement ShardAssignor/,
      );
    } finally {
      await broken.close().catch(() => undefined);
    }
  });
});
