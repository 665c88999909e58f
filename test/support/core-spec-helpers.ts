import { expect } from 'vitest';
import type {
  HeartbeatRequest,
  HeartbeatResponse,
  LeaveResponse,
  StreamShards,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  type Assignment,
  assignmentOf,
  fromRecord,
  toRecord,
  toWire,
} from '../../apps/coordinator/src/core/assignment.js';
import { CoordinatorError } from '../../apps/coordinator/src/core/coordinator-error.js';
import { GroupState, groupStateName } from '../../apps/coordinator/src/core/group-state.js';
import type { GroupTransaction } from '../../apps/coordinator/src/core/group-transaction.js';
import type { HeartbeatOutcome } from '../../apps/coordinator/src/core/heartbeat.js';
import type { MemberRecord } from '../../apps/coordinator/src/core/member.js';
import type { GroupSimulator } from './group-simulator.js';

/** Shared helpers for the core's scenario specs (pure, no Redis). */

type Sent = { outcome: HeartbeatOutcome; txn: GroupTransaction };

/** The heartbeat response of a non-leave outcome (fails the test otherwise). */
export function hb(sent: Sent): HeartbeatResponse {
  expect(sent.outcome.kind).toBe('heartbeat');
  return sent.outcome.response as HeartbeatResponse;
}

/** The leave response of a `-1`/`-2` outcome (fails the test otherwise). */
export function left(sent: Sent): LeaveResponse {
  expect(sent.outcome.kind).toBe('leave');
  return sent.outcome.response;
}

/** Runs `fn`, expects a {@link CoordinatorError} and returns it. */
export function refusal(fn: () => unknown): CoordinatorError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(CoordinatorError);
    return error as CoordinatorError;
  }
  throw new Error('expected a CoordinatorError, the call succeeded');
}

/** The refusal's code, after checking nothing was committed. */
export function refusedWith(sim: GroupSimulator, req: HeartbeatRequest): string {
  const version = sim.version;
  const meta = sim.group.meta;
  const members = new Map(sim.group.members);
  const error = refusal(() => sim.heartbeat(req));
  expect(sim.version).toBe(version);
  expect(sim.group.meta).toBe(meta);
  expect(sim.group.members).toEqual(members);
  return error.code;
}

/** Wire shards: `w({ orders: [0, 1] })`. */
export function w(shards: Record<string, number[]>): StreamShards[] {
  return toWire(assignmentOf(shards));
}

/** Assignment shorthand. */
export function as(shards: Record<string, number[]>): Assignment {
  return assignmentOf(shards);
}

/** The `assignment` of a response without keys, or `undefined` when absent. */
export function shardsOf(res: HeartbeatResponse): StreamShards[] | undefined {
  return res.assignment?.shards.map((e) => ({ stream: e.stream, shards: e.shards }));
}

/** A full heartbeat (every field). */
export function fullHeartbeat(
  memberId: string,
  memberEpoch: number,
  streams: string[],
  owned: StreamShards[],
  extra: Partial<HeartbeatRequest> = {},
): HeartbeatRequest {
  return {
    memberId,
    memberEpoch,
    rebalanceTimeoutMs: 30000,
    subscribedStreams: streams,
    ownedShards: owned,
    ...extra,
  };
}

/** The committed member (fails the test when absent). */
export function memberOf(sim: GroupSimulator, memberId: string): MemberRecord {
  const m = sim.group.members.get(memberId);
  expect(m, `member ${memberId}`).toBeDefined();
  return m as MemberRecord;
}

/** The group state name (docs/protocol.md §6.4) of the committed group. */
export function stateOf(sim: GroupSimulator): string {
  return groupStateName(sim.group.meta, sim.group.members.values(), sim.group.members.size);
}

/** Event types of a transaction, in order. */
export function eventTypes(txn: GroupTransaction): string[] {
  return txn.events.map((e) => e.type);
}

/** The data of the only event of `type` (fails the test when not exactly one). */
export function eventData(txn: GroupTransaction, type: string): Record<string, unknown> {
  const found = txn.events.filter((e) => e.type === type);
  expect(found.map((e) => e.type)).toEqual([type]);
  return (found[0] as { data: Record<string, unknown> }).data;
}

/** Who holds every shard, as `stream/shard → memberId`, from the committed owner index. */
export function ownersOf(sim: GroupSimulator): Record<string, string> {
  const out: Record<string, string> = {};
  for (const o of sim.group.owners.values()) out[`${o.stream}/${o.shard}`] = o.memberId;
  return out;
}

/**
 * What the service does after a restart: rebuild the committed state from its persisted records
 * (copied through the JSON form, so nothing is shared with the old state).
 */
export function restart(sim: GroupSimulator): void {
  const g = sim.group;
  const members = [...g.members.values()].map((m) => ({
    ...m,
    subscribedStreams: [...m.subscribedStreams],
    assigned: fromRecord(toRecord(m.assigned)),
    pendingRevocation: fromRecord(toRecord(m.pendingRevocation)),
  }));
  const targets = [...g.targets].map(([id, t]) => [id, fromRecord(toRecord(t))] as const);
  sim.group = GroupState.fromRecords(g.groupId, { ...g.meta }, members, targets);
}

/**
 * Drives every member to STABLE the way honest members do: each one heartbeats (partial), reporting
 * exactly what it was last given, until the group is STABLE. Returns the number of rounds.
 */
export function settle(sim: GroupSimulator, maxRounds = 20): number {
  for (let round = 1; round <= maxRounds; round++) {
    for (const id of [...sim.group.members.keys()].sort()) {
      const m = memberOf(sim, id);
      if (m.memberEpoch < 0) continue;
      sim.heartbeat({ memberId: id, memberEpoch: m.memberEpoch, ownedShards: toWire(m.assigned) });
    }
    if (stateOf(sim) === 'STABLE') return round;
  }
  throw new Error(`group did not settle within ${maxRounds} rounds: ${stateOf(sim)}`);
}
