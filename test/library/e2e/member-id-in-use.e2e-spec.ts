import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess } from '../../support/coordinator-process.js';
import { useRedisPrefix } from '../../support/redis.js';
import { pause, waitFor } from '../../support/wait.js';
import { WorkerProcess } from '../../support/worker-process.js';

// Issue 17 part 4 item 3: one fixed member id given to two live processes is refused, not shared.
describe('e2e: two workers with the same fixed member id', () => {
  const redis = useRedisPrefix('e2e-member-id-in-use');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:2', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
    });
    api = new CoordinatorApi(coordinator.url);
  });
  afterAll(async () => {
    for (const w of workers) await w.stop('SIGKILL').catch(() => undefined);
    await coordinator?.stop();
  });

  const start = async (): Promise<WorkerProcess> => {
    const worker = await WorkerProcess.start({
      coordinatorUrl: coordinator.url,
      group: 'twins',
      env: { MEMBER_ID: 'twin' },
    });
    workers.push(worker);
    return worker;
  };

  it('the second is refused with a clear error, the first keeps its shards; after the first dies past its session the second joins', async () => {
    const first = await start();
    await waitFor(async () => (await first.status()).shards.length === 2, {
      timeoutMs: 15_000,
      intervalMs: 50,
      message: 'the first worker to own both shards',
    });
    const epochBefore = (await first.status()).memberEpoch;

    const second = await start();
    await waitFor(() => /MemberIdInUseError|already used by a live member/.test(second.output()), {
      timeoutMs: 15_000,
      intervalMs: 50,
      message: 'the second worker to log the refusal',
    });
    expect(second.output()).toContain('member id "twin" is already used by a live member');
    // past several heartbeat intervals: the first is not disturbed (no fence, same epoch)
    await pause(1500);
    const firstNow = await first.status();
    expect(firstNow).toMatchObject({ phase: 'active', memberEpoch: epochBefore });
    expect(firstNow.shards).toHaveLength(2);
    expect((await second.status()).shards).toEqual([]);
    expect(first.output()).not.toMatch(/FENCED_MEMBER_EPOCH|dropping every shard/);
    const group = (await api.get<DescribedGroup>('/v1/groups/twins')).body;
    expect(group.members.map((m) => m.memberId)).toEqual(['twin']);

    // the first dies without leaving: once its session expired, the second joins
    await first.stop('SIGKILL');
    await waitFor(async () => (await second.status()).shards.length === 2, {
      timeoutMs: 20_000,
      intervalMs: 100,
      message: 'the second worker to own both shards after the first expired',
    });
  });
});
