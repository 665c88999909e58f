import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { allShards, fromWire, setKey, type ShardRef } from './shard-set.js';

/** Shards that a describe view shows in two members' `assignment ∪ pendingRevocation`. */
export function describedDoubleOwners(group: DescribedGroup): string[] {
  const holder = new Map<ShardRef, string>();
  const problems: string[] = [];
  for (const m of group.members) {
    for (const ref of [...fromWire(m.assignment), ...fromWire(m.pendingRevocation)]) {
      const other = holder.get(ref);
      if (other !== undefined && other !== m.memberId) {
        problems.push(`describe: ${ref} held by both ${other} and ${m.memberId}`);
      }
      holder.set(ref, m.memberId);
    }
  }
  return problems;
}

/** What a converged group must look like. */
export interface ConvergenceExpectation {
  /** Stream → shard count; every member subscribes to every stream. */
  readonly streams: Readonly<Record<string, number>>;
  /** The member ids the group must have, exactly. */
  readonly members: readonly string[];
}

/**
 * Why `group` is not converged (empty when it is): STABLE, exactly the expected members, each
 * STABLE at the assignment epoch with nothing pending and its assignment equal to its target,
 * every shard assigned exactly once, and per stream the sizes within one of each other.
 */
export function convergenceProblems(
  group: DescribedGroup,
  expected: ConvergenceExpectation,
): string[] {
  const problems: string[] = [...describedDoubleOwners(group)];
  if (group.state !== 'STABLE') problems.push(`group state ${group.state}`);
  if (group.groupEpoch !== group.assignmentEpoch) {
    problems.push(`group epoch ${group.groupEpoch} ≠ assignment epoch ${group.assignmentEpoch}`);
  }
  const ids = group.members.map((m) => m.memberId).sort();
  const want = [...expected.members].sort();
  if (ids.join(',') !== want.join(','))
    problems.push(`members [${ids.join(',')}], expected [${want.join(',')}]`);
  const counts = new Map<ShardRef, number>();
  for (const m of group.members) {
    if (m.state !== 'STABLE' || m.memberEpoch !== group.assignmentEpoch) {
      problems.push(
        `${m.memberId} is ${m.state} at epoch ${m.memberEpoch} (assignment epoch ${group.assignmentEpoch})`,
      );
    }
    if (m.pendingRevocation.length > 0) problems.push(`${m.memberId} still revoking`);
    const assigned = fromWire(m.assignment);
    if (setKey(assigned) !== setKey(fromWire(m.target)))
      problems.push(`${m.memberId} assignment ≠ target`);
    for (const ref of assigned) counts.set(ref, (counts.get(ref) ?? 0) + 1);
  }
  for (const ref of allShards(expected.streams)) {
    const n = counts.get(ref) ?? 0;
    if (n !== 1) problems.push(`${ref} assigned ${n} times`);
  }
  for (const stream of Object.keys(expected.streams)) {
    const sizes = group.members.map(
      (m) => m.assignment.find((e) => e.stream === stream)?.shards.length ?? 0,
    );
    if (sizes.length > 0 && Math.max(...sizes) - Math.min(...sizes) > 1) {
      problems.push(`${stream} sizes not within one: ${sizes.join(',')}`);
    }
  }
  return problems;
}
