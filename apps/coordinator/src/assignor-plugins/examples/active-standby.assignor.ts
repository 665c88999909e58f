import { Injectable } from '@nestjs/common';
import { type Assignment, assignmentOf, EMPTY_ASSIGNMENT } from '../../core/assignment.js';
import type {
  AssignorInput,
  AssignorMember,
  ShardAssignor,
} from '../../core/assignors/shard-assignor.interface.js';
import { ShardAssignorProvider } from '../shard-assignor-provider.decorator.js';

/**
 * Example custom assignor, `active-standby`: per stream, **one** member (the active one) gets every
 * shard and the other subscribers are hot standbys with nothing. For consumers that must run as a
 * singleton per stream (a job that needs one writer, or a total order across all shards) yet fail
 * over within milliseconds: when the active member leaves, expires or is removed, the target is
 * recomputed in the same change and the standby that takes over is nudged at once.
 *
 * Choice of the active member, per stream, among its subscribers:
 * 1. sticky — the subscriber whose previous target holds the most shards of the stream (so a new
 *    member with a smaller id never takes over from a healthy active one, and nothing moves when a
 *    standby joins or leaves);
 * 2. otherwise the subscriber with the smallest member id (members are iterated in id order).
 *
 * Pure and deterministic, as the {@link ShardAssignor} contract requires. Registered as a Nest
 * provider of the coordinator app:
 *
 * ```ts
 * const app = await createCoordinatorApp(loadCoordinatorConfig(), { providers: [ActiveStandbyAssignor] });
 * ```
 *
 * Members opt in with `"assignor": "active-standby"` in their heartbeat (the group uses the name most
 * members prefer, docs/protocol.md §5.2).
 *
 * @publicApi
 */
@ShardAssignorProvider()
@Injectable()
export class ActiveStandbyAssignor implements ShardAssignor {
  /** The name members use to ask for this assignor. */
  static readonly NAME = 'active-standby';

  readonly name = ActiveStandbyAssignor.NAME;

  assign(input: AssignorInput): Map<string, Assignment> {
    const given = new Map<string, Array<[string, readonly number[]]>>();
    for (const [stream, shards] of input.streams) {
      const subscribers = [...input.members.values()].filter((m) =>
        m.subscribedStreams.includes(stream),
      );
      const active = pickActive(subscribers, stream);
      if (!active || shards.length === 0) continue;
      const list = given.get(active.memberId) ?? [];
      list.push([stream, shards]);
      given.set(active.memberId, list);
    }
    const out = new Map<string, Assignment>();
    for (const memberId of input.members.keys()) {
      const entries = given.get(memberId);
      out.set(memberId, entries ? assignmentOf(entries) : EMPTY_ASSIGNMENT);
    }
    return out;
  }
}

/** The sticky choice, else the first subscriber (smallest id). */
function pickActive(
  subscribers: readonly AssignorMember[],
  stream: string,
): AssignorMember | undefined {
  let best: AssignorMember | undefined;
  let bestCount = 0;
  for (const m of subscribers) {
    const count = m.previousTarget.get(stream)?.length ?? 0;
    if (count > bestCount) {
      best = m;
      bestCount = count;
    }
  }
  return best ?? subscribers[0];
}
