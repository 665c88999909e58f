import type {
  DescribedGroup,
  DescribedMember,
  GroupListing,
} from '@redis-stream-coordinator/nestjs/protocol';
import { EMPTY_ASSIGNMENT, toWire } from '../core/assignment.js';
import { chooseAssignor } from '../core/coordinator-rules.js';
import { type GroupState, groupStateName } from '../core/group-state.js';

/**
 * Builds the describe view of docs/protocol.md §6.3 from committed state. With `configured`
 * (the assignors this replica has), `assignor` is the one recomputes really run: the default when
 * the members' choice is not configured (see `resolveAssignor`).
 */
export function describeGroup(
  state: GroupState,
  lastSeen: ReadonlyMap<string, number>,
  defaultAssignor: string,
  configured?: ReadonlyMap<string, unknown>,
): DescribedGroup {
  const chosen = chooseAssignor(
    [...state.members.values()].map((m) => m.assignor),
    defaultAssignor,
  );
  const members = [...state.members.values()].sort((a, b) => (a.memberId < b.memberId ? -1 : 1));
  return {
    groupId: state.groupId,
    state: groupStateName(state.meta, members, members.length),
    groupEpoch: state.meta.groupEpoch,
    assignmentEpoch: state.meta.assignmentEpoch,
    assignor: configured === undefined || configured.has(chosen) ? chosen : defaultAssignor,
    members: members.map((m): DescribedMember => ({
      memberId: m.memberId,
      instanceId: m.instanceId,
      rackId: m.rackId,
      memberEpoch: m.memberEpoch,
      state: m.state,
      subscribedStreams: [...m.subscribedStreams],
      assignment: toWire(m.assigned),
      pendingRevocation: toWire(m.pendingRevocation),
      target: toWire(state.targets.get(m.memberId) ?? EMPTY_ASSIGNMENT),
      lastHeartbeatAt: new Date(lastSeen.get(m.memberId) ?? m.joinedAt).toISOString(),
      clientHost: m.clientHost,
    })),
  };
}

/** One entry of `GET /v1/groups`. */
export function listGroup(state: GroupState): GroupListing {
  const members = [...state.members.values()];
  return {
    groupId: state.groupId,
    state: groupStateName(state.meta, members, members.length),
    groupEpoch: state.meta.groupEpoch,
    members: members.length,
  };
}
