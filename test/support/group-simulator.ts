import type { HeartbeatRequest } from '@redis-stream-coordinator/nestjs/protocol';
import type { Assignment } from '../../apps/coordinator/src/core/assignment.js';
import type { ShardAssignor } from '../../apps/coordinator/src/core/assignors/shard-assignor.interface.js';
import type { CoordinatorRules } from '../../apps/coordinator/src/core/coordinator-rules.js';
import { GroupState } from '../../apps/coordinator/src/core/group-state.js';
import { GroupTransaction } from '../../apps/coordinator/src/core/group-transaction.js';
import {
  type HeartbeatOutcome,
  processHeartbeat,
} from '../../apps/coordinator/src/core/heartbeat.js';
import { removeMember } from '../../apps/coordinator/src/core/group-operations.js';
import type { RemovalReason } from '../../apps/coordinator/src/core/group-event.js';
import type { StreamCatalog } from '../../apps/coordinator/src/core/stream-catalog.js';

/** A stream catalog backed by a plain map (stream → shard ids). */
export class StaticCatalog implements StreamCatalog {
  readonly streams = new Map<string, number[]>();
  private readonly versions = new Map<string, number>();

  constructor(streams: Record<string, number> = {}) {
    for (const [s, n] of Object.entries(streams)) this.set(s, [...Array(n).keys()]);
  }

  set(stream: string, shards: number[]): void {
    this.streams.set(
      stream,
      [...shards].sort((a, b) => a - b),
    );
    this.versions.set(stream, (this.versions.get(stream) ?? 0) + 1);
  }

  view(_group: string, stream: string): { version: string; shards: readonly number[] } | undefined {
    const shards = this.streams.get(stream);
    return shards ? { version: String(this.versions.get(stream)), shards } : undefined;
  }

  knows(stream: string, shard: number): boolean {
    return this.streams.get(stream)?.includes(shard) ?? false;
  }

  shardKey(stream: string, shard: number): string {
    return `rsc:{${stream}:${shard}}`;
  }
}

/**
 * A deterministic, sticky-free assignor for core tests: per stream, shard i goes to the
 * (i mod n)-th subscriber in member id order.
 */
export const roundRobinAssignor: ShardAssignor = {
  name: 'round-robin',
  assign({ members, streams }) {
    const out = new Map<string, Assignment>();
    const acc = new Map<string, Map<string, number[]>>();
    for (const id of members.keys()) acc.set(id, new Map());
    for (const [stream, shards] of streams) {
      const subs = [...members.values()].filter((m) => m.subscribedStreams.includes(stream));
      if (subs.length === 0) continue;
      shards.forEach((shard, i) => {
        const m = subs[i % subs.length];
        if (!m) return;
        const mine = acc.get(m.memberId) as Map<string, number[]>;
        mine.set(stream, [...(mine.get(stream) ?? []), shard]);
      });
    }
    for (const [id, a] of acc) out.set(id, a);
    return out;
  },
};

/** Rules with small numbers, for tests. */
export function testRules(assignors: ShardAssignor[] = [roundRobinAssignor]): CoordinatorRules {
  return {
    heartbeatIntervalMs: 3000,
    sessionTimeoutMs: 15000,
    groupMaxSize: 100,
    defaultAssignor: assignors[0]?.name ?? 'round-robin',
    assignors: new Map(assignors.map((a) => [a.name, a])),
  };
}

/**
 * Drives the pure core the way the service does — one transaction per request, committed only
 * when the request succeeds — without Redis or HTTP.
 */
export class GroupSimulator {
  group: GroupState;
  exists = false;
  now = 1_000_000;
  version = 0;

  constructor(
    readonly catalog: StaticCatalog,
    readonly rules: CoordinatorRules = testRules(),
    readonly groupId = 'g',
  ) {
    this.group = GroupState.empty(groupId, this.now);
  }

  /** Sends a heartbeat; returns the outcome and the committed transaction. */
  heartbeat(req: HeartbeatRequest): { outcome: HeartbeatOutcome; txn: GroupTransaction } {
    const txn = new GroupTransaction(this.group, this.now);
    const outcome = processHeartbeat(txn, this.exists, req, {
      rules: this.rules,
      catalog: this.catalog,
      clientHost: '127.0.0.1',
    });
    this.commit(txn);
    return { outcome, txn };
  }

  /** Removes a member as the timers or the admin route would. */
  remove(memberId: string, reason: RemovalReason): GroupTransaction {
    const txn = new GroupTransaction(this.group, this.now);
    removeMember(txn, memberId, reason, this.catalog, this.rules);
    this.commit(txn);
    return txn;
  }

  private commit(txn: GroupTransaction): void {
    if (txn.dirty) {
      this.version += 1;
      txn.commit(this.version);
      this.exists = true;
    }
  }

  /** A join request with sensible defaults. */
  static join(
    memberId: string,
    streams: string[],
    extra: Partial<HeartbeatRequest> = {},
  ): HeartbeatRequest {
    return {
      memberId,
      memberEpoch: 0,
      rebalanceTimeoutMs: 30000,
      subscribedStreams: streams,
      ownedShards: [],
      ...extra,
    };
  }
}
