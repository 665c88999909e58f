import { type Assignment, EMPTY_ASSIGNMENT } from '../assignment.js';
import { buildGroupModel, toAssignment } from './group-model.js';
import type { AssignorInput, AssignorMember, ShardAssignor } from './shard-assignor.interface.js';

const byCodeUnits = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The order `range` lays members out in (docs/protocol.md §5.1): static members first, by instance
 * id (then member id), then dynamic members by member id.
 *
 * @publicApi
 */
export function compareRangeOrder(a: AssignorMember, b: AssignorMember): number {
  if (a.instanceId !== null && b.instanceId !== null) {
    return byCodeUnits(a.instanceId, b.instanceId) || byCodeUnits(a.memberId, b.memberId);
  }
  if (a.instanceId !== null) return -1;
  if (b.instanceId !== null) return 1;
  return byCodeUnits(a.memberId, b.memberId);
}

/**
 * The `range` assignor, after Kafka's RangeAssignor. Per stream `t` with `P_t` shards and `M_t`
 * subscribers laid out in {@link compareRangeOrder} order, subscriber `i` gets the contiguous run of
 * shards (in ascending id order) starting at `i·q + min(i, r)` of length `q + (i < r ? 1 : 0)`, where
 * `q = floor(P_t/M_t)` and `r = P_t mod M_t`: the first `r` subscribers take one more, subscribers
 * beyond the shard count take nothing.
 *
 * Co-partitioned: when members subscribe to the same streams and those streams have the same shard
 * ids, each member gets the same shard ids of every stream. Not sticky: previous targets are ignored,
 * the layout depends only on membership. Time O(M log M + P).
 *
 * @publicApi
 */
export class RangeAssignor implements ShardAssignor {
  /** The name members use to ask for this assignor. */
  static readonly NAME = 'range';

  readonly name = RangeAssignor.NAME;

  assign(input: AssignorInput): Map<string, Assignment> {
    const model = buildGroupModel(this.name, input);
    const layout = model.members.map((_, i) => i);
    layout.sort((a, b) =>
      compareRangeOrder(model.members[a] as AssignorMember, model.members[b] as AssignorMember),
    );
    const subscribers = new Map<number, number[]>();
    for (const i of layout) {
      for (const t of model.subscriptions[i] ?? []) {
        const list = subscribers.get(t);
        if (list) list.push(i);
        else subscribers.set(t, [i]);
      }
    }

    const targets = model.members.map(() => new Map<number, number[]>());
    for (const [t, subs] of subscribers) {
      const shards = model.streams[t]?.shards.length ?? 0;
      const q = Math.floor(shards / subs.length);
      const r = shards % subs.length;
      subs.forEach((i, k) => {
        const start = k * q + Math.min(k, r);
        const length = q + (k < r ? 1 : 0);
        if (length === 0) return;
        (targets[i] as Map<number, number[]>).set(
          t,
          Array.from({ length }, (_, j) => start + j),
        );
      });
    }

    const result = new Map<string, Assignment>();
    model.members.forEach((member, i) => {
      const target = targets[i] as Map<number, number[]>;
      result.set(
        member.memberId,
        target.size > 0 ? toAssignment(model.streams, target) : EMPTY_ASSIGNMENT,
      );
    });
    return result;
  }
}
