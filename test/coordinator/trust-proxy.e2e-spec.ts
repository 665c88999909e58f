import { afterEach, describe, expect, it } from 'vitest';
import type { DescribedGroup, HeartbeatResponse } from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import { describeGroup, joinRequest } from './support/coordinator-fixture.js';

/**
 * `TRUST_PROXY`: off by default, the member's host shown by describe is the socket's address and
 * `X-Forwarded-For` is ignored, so a client can neither spoof it nor turn its no-op heartbeats
 * into commits by changing the header. Behind a proxy, `TRUST_PROXY=true` shows the forwarded
 * address.
 */
describe('TRUST_PROXY', () => {
  const redis = useRedisPrefix('trust-proxy');
  let coordinator: CoordinatorProcess | undefined;
  afterEach(async () => {
    await coordinator?.stop();
    coordinator = undefined;
  });

  async function start(env: Record<string, string>): Promise<CoordinatorApi> {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:2', SESSION_TIMEOUT_MS: '600000', ...env },
    });
    return new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
  }

  /** Joins `memberId` to `group`, then heartbeats 5 times, each with another forwarded address. */
  async function joinAndBeat(api: CoordinatorApi, group: string, memberId: string) {
    const beat = (body: unknown, host: string) =>
      api.request<HeartbeatResponse>('POST', `/v1/groups/${group}/heartbeat`, body, {
        'x-forwarded-for': host,
      });
    const joined = await beat(joinRequest(memberId, ['orders']), '203.0.113.1');
    expect(joined.status).toBe(200);
    const epoch = joined.body.memberEpoch;
    const events = async () =>
      (await api.get<{ events: unknown[] }>(`/v1/groups/${group}/events?limit=1000`)).body.events
        .length;
    const before = await events();
    for (let i = 2; i <= 6; i++) {
      const res = await beat({ memberId, memberEpoch: epoch }, `203.0.113.${i}`);
      expect(res.status).toBe(200);
    }
    const described: DescribedGroup = await describeGroup(api, group);
    return { described, commits: (await events()) - before };
  }

  it('is off by default: X-Forwarded-For is ignored and changing it commits nothing', async () => {
    const api = await start({});
    const { described, commits } = await joinAndBeat(api, 'g-default', 'm1');
    expect(described.members[0]?.clientHost).toBe('127.0.0.1');
    expect(commits).toBe(0);
  });

  it('TRUST_PROXY=true shows the forwarded address', async () => {
    const api = await start({ TRUST_PROXY: 'true' });
    const { described, commits } = await joinAndBeat(api, 'g-trusted', 'm1');
    expect(described.members[0]?.clientHost).toBe('203.0.113.6');
    // what the default prevents: each new forwarded address was a write
    expect(commits).toBeGreaterThan(0);
  });

  it('TRUST_PROXY naming other proxies ignores X-Forwarded-For from this client', async () => {
    const api = await start({ TRUST_PROXY: '10.0.0.0/8' });
    const { described } = await joinAndBeat(api, 'g-listed', 'm1');
    expect(described.members[0]?.clientHost).toBe('127.0.0.1');
  });
});
