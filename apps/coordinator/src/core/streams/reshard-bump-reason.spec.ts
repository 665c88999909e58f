import { describe, expect, it } from 'vitest';
import type {
  HeartbeatRequest,
  HeartbeatResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import { testRules } from '../../../../../test/support/group-simulator.js';
import { draining, observation } from '../../../../../test/support/reshard-spec-helpers.js';
import { refreshMetadata } from '../group-operations.js';
import { GroupState } from '../group-state.js';
import { GroupTransaction } from '../group-transaction.js';
import { processHeartbeat } from '../heartbeat.js';
import type { StreamCatalog } from '../stream-catalog.js';
import { maybeUpdateTarget } from '../target-assignment.js';
import { applyObservation } from './reshard-steps.js';
import { consumableShards, newStreamRecord, type StreamRecord } from './stream-record.js';

/** A catalog over stream records, with views versioned by their shard list (as the registry does). */
class RecordCatalog implements StreamCatalog {
  readonly records = new Map<string, StreamRecord>();

  view(group: string, stream: string) {
    const r = this.records.get(stream);
    if (!r) return undefined;
    const shards = consumableShards(r, group);
    return { version: `[${shards.join('.')}]`, shards, resharding: r.resharding !== null };
  }

  knows(stream: string, shard: number): boolean {
    return this.records.get(stream)?.shards.some((s) => s.id === shard) ?? false;
  }

  shardKey(stream: string, shard: number): string {
    return `rsc:{${stream}:${shard}}`;
  }
}

describe('epoch bumps caused by reshard steps say "reshard"', () => {
  const rules = testRules();
  const catalog = new RecordCatalog();
  let group = GroupState.empty('g', 0);
  let version = 0;
  let epoch = 0;
  const commit = (txn: GroupTransaction): GroupTransaction => {
    if (txn.dirty) txn.commit(++version);
    group = txn.base;
    return txn;
  };
  const beat = (): GroupTransaction => {
    const txn = new GroupTransaction(group, 1000);
    const req: HeartbeatRequest = {
      memberId: 'm1',
      memberEpoch: epoch,
      rebalanceTimeoutMs: 30_000,
      subscribedStreams: ['orders', 'other'],
      ownedShards: [],
    };
    const out = processHeartbeat(txn, version > 0, req, { rules, catalog, clientHost: null });
    epoch = (out.response as HeartbeatResponse).memberEpoch;
    return commit(txn);
  };
  const reasons = (txn: GroupTransaction, type: string): unknown[] =>
    txn.events.filter((e) => e.type === type).map((e) => e.data.reason);

  it('a reshard that leaves the view as it was bumps nothing; a drain does, with reason reshard', () => {
    catalog.records.set('orders', newStreamRecord('orders', 2, 0));
    beat();
    // Published and closed: the tracked group still sees exactly its old shards.
    catalog.records.set('orders', draining(newStreamRecord('orders', 2, 0), 3, ['g']));
    const same = beat();
    expect(reasons(same, 'GROUP_EPOCH_BUMPED')).toEqual([]);
    // Old shard 0 drained: it leaves the view, its child 2 enters.
    const drained = applyObservation(
      catalog.records.get('orders') as StreamRecord,
      observation([[0, 'g']], { g: {} }),
    );
    catalog.records.set('orders', drained.record);
    const bumped = beat();
    expect(reasons(bumped, 'GROUP_EPOCH_BUMPED')).toEqual(['reshard']);
    expect(reasons(bumped, 'TARGET_ASSIGNMENT_CHANGED')).toEqual(['reshard']);
  });

  it('another stream appearing is plain metadata', () => {
    catalog.records.set('other', newStreamRecord('other', 1, 0));
    const txn = new GroupTransaction(group, 2000);
    const reason = refreshMetadata(txn, catalog);
    expect(reason).toBe('metadata');
    expect(maybeUpdateTarget(txn, catalog, rules, reason ?? 'metadata', null)).toBe(true);
    expect(reasons(txn, 'TARGET_ASSIGNMENT_CHANGED')).toEqual(['metadata']);
    expect(refreshMetadata(new GroupTransaction(commit(txn).base, 3000), catalog)).toBeNull();
  });
});
