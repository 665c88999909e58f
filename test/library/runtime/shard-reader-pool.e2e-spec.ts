import { describe, expect, it } from 'vitest';
import { JSON_PAYLOAD_SERIALIZER } from '../../../libs/stream-coordinator/src/data-plane/json-payload.serializer.js';
import type { StreamHandlerDefinition } from '../../../libs/stream-coordinator/src/discovery/stream-handler-definition.interface.js';
import { STREAM_SHARD_HANDLER_DEFAULTS } from '../../../libs/stream-coordinator/src/constants/stream-coordinator.constants.js';
import type { GrantedShard } from '../../../libs/stream-coordinator/src/runtime/membership.js';
import {
  ShardReaderPool,
  shardId,
} from '../../../libs/stream-coordinator/src/runtime/shard-reader-pool.js';
import { useRedisPrefix } from '../../support/redis.js';
import { testReaderConnection } from '../data-plane/data-plane-fixtures.js';

// The pool's reconciliation (white box): shards re-granted while their old readers are still
// settling are started again once those settle — each on its own, never touching the others.
// (The readers here never get a fence, so they wait in their acquire phase: enough for the pool.)
describe('shard reader pool: re-grant while settling', () => {
  const redis = useRedisPrefix('pool-regrant');

  it('restarts every re-granted shard and revokes none of them', async () => {
    const shard = (n: number): GrantedShard => ({
      stream: 'orders',
      shard: n,
      key: `${redis.prefix}:{orders}:${n}`,
    });
    const definition: StreamHandlerDefinition = {
      stream: 'orders',
      options: {
        ...STREAM_SHARD_HANDLER_DEFAULTS,
        retry: { ...STREAM_SHARD_HANDLER_DEFAULTS.retry },
      },
      invoke: async () => undefined,
      className: 'Test',
      methodName: 'handle',
    };
    const released: Array<{ shard: number; cause: string }> = [];
    const pool = new ShardReaderPool({
      group: 'g',
      memberId: 'm',
      handler: () => definition,
      createConnection: () => testReaderConnection(),
      serializer: JSON_PAYLOAD_SERIALIZER,
      logger: { log: () => undefined, warn: () => undefined, error: () => undefined },
      onReleased: (s, cause) => released.push({ shard: s.shard, cause }),
    });
    const both = new Map([0, 1].map((n) => [shardId('orders', n), shard(n)]));
    try {
      pool.reconcile(both);
      expect(pool.held().map((s) => s.shard)).toEqual([0, 1]);
      // dropped (as a self-fence does) and granted again before the readers settled
      const dropped = pool.stopAll('dropped');
      pool.reconcile(both);
      await dropped;
      const deadline = Date.now() + 5000;
      while (Date.now() < deadline) {
        const running = pool
          .readers()
          .filter((r) => !r.stopping)
          .map((r) => r.shard.shard);
        if (running.length === 2) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      await new Promise((r) => setTimeout(r, 200)); // a revocation would have been started by now
      expect(
        pool
          .readers()
          .filter((r) => !r.stopping)
          .map((r) => r.shard.shard)
          .sort((a, b) => a - b),
      ).toEqual([0, 1]);
      expect(released.filter((r) => r.cause === 'revoked')).toEqual([]);
      expect(released.map((r) => r.cause)).toEqual(['dropped', 'dropped']);
    } finally {
      await pool.close();
    }
  });
});
