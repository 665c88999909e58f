import { Redis } from 'ioredis';
import { Redis as Redis5 } from 'ioredis5';
import type { ReaderClient } from '@redis-stream-coordinator/nestjs';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { DirectReaderClient } from '../../../libs/stream-coordinator/src/internal/index.js';
import { CoordinatorProcess } from '../../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../../support/redis.js';
import { waitFor } from '../../support/wait.js';
import { type MemberApp, startMemberApp } from './member-app.js';

/** The client instance each `XREADGROUP` was sent from (`sendCommand`'s `this`). */
function readersOf(spy: { mock: { calls: unknown[][]; contexts: unknown[] } }): unknown[] {
  return spy.mock.calls.flatMap((call, i) =>
    String((call[0] as { name?: string }).name).toLowerCase() === 'xreadgroup'
      ? [spy.mock.contexts[i]]
      : [],
  );
}

// The module option `readerClient` picks what the shard readers are built with: the library's
// direct connection (default), its own ioredis 5, or the application's ioredis. Either way a real
// member handles every message; spies on the direct connection's reads and on both ioredis
// libraries' `sendCommand` show which one sent the reads. (Under RSC_IOREDIS=5 the
// application's ioredis is ioredis 5 too, and both ioredis spies watch one prototype.)
describe('e2e: readerClient picks the client of the shard readers', () => {
  const redis = useRedisPrefix('e2e-reader-client');
  const sameLibrary = (Redis as unknown) === (Redis5 as unknown);
  let coordinator: CoordinatorProcess;
  let app: MemberApp | undefined;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:2', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
    });
  });
  afterEach(async () => {
    vi.restoreAllMocks();
    await app?.app.close();
    app = undefined;
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it.each<[ReaderClient | undefined, ReaderClient]>([
    [undefined, 'direct'],
    ['bundled', 'bundled'],
    ['application', 'application'],
  ])('readerClient %s: readers on the %s client handle every message', async (option, used) => {
    const direct = vi.spyOn(DirectReaderClient.prototype, 'xreadgroupBuffer');
    const application = vi.spyOn(Redis.prototype, 'sendCommand');
    const bundled = sameLibrary ? application : vi.spyOn(Redis5.prototype, 'sendCommand');
    const member = await startMemberApp({
      coordinatorUrl: coordinator.url,
      redis: redisUrl(),
      group: `reader-client-${used}`,
      handle: async () => {},
      module: option === undefined ? {} : { readerClient: option },
    });
    app = member;
    await waitFor(() => member.runtime.status().held.length === 2, {
      timeoutMs: 15_000,
      message: 'the member owning both shards',
    });
    // keys of this case only: the stream is shared, and the second group also reads the first's
    const keys = Array.from({ length: 40 }, (_, i) => `${used}-${i}`);
    for (const [i, key] of keys.entries()) await member.producer.publish('orders', key, { seq: i });
    const handledKeys = (): number =>
      new Set(member.handled.map((m) => m.key).filter((k) => keys.includes(k))).size;
    await waitFor(() => handledKeys() === keys.length, {
      timeoutMs: 15_000,
      message: () => `the 40 keys of this case handled (${handledKeys()} so far)`,
    });

    const viaBundled = readersOf(bundled);
    const viaApplication = readersOf(application);
    if (used === 'direct') {
      expect(direct.mock.calls.length).toBeGreaterThan(0);
      expect([...viaBundled, ...viaApplication]).toEqual([]);
    } else {
      expect(direct).not.toHaveBeenCalled();
      const reads = used === 'bundled' ? viaBundled : viaApplication;
      expect(reads.length).toBeGreaterThan(0);
      for (const client of reads) {
        expect(client).toBeInstanceOf(used === 'bundled' ? Redis5 : Redis);
      }
      if (!sameLibrary) {
        // ioredis 6 is not a subclass of 5 nor the reverse: no read went through the other one
        expect(used === 'bundled' ? viaApplication : viaBundled).toEqual([]);
      }
    }
    expect(member.logs.filter((l) => l.level === 'error')).toEqual([]);
  });
});
