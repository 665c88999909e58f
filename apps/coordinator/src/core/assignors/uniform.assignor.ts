import { type Assignment, EMPTY_ASSIGNMENT } from '../assignment.js';
import { buildGroupModel, isHomogeneous } from './group-model.js';
import { resolvePreviousTargets } from './previous-ownership.js';
import type { AssignorInput, ShardAssignor } from './shard-assignor.interface.js';
import { buildHeterogeneousTargets } from './uniform-heterogeneous.builder.js';
import { buildHomogeneousTargets } from './uniform-homogeneous.builder.js';

/**
 * The default server-side assignor (`uniform`), after Kafka's UniformAssignor. Goals in priority
 * order: balance, then stickiness. Deterministic and pure; the order of `input.streams` does not
 * matter, members are taken in ascending member id order.
 *
 * Common rules:
 * - a member's previous target counts only for shards that still exist, of streams it still
 *   subscribes to; where previous targets overlap, the smallest member id keeps the shard;
 * - members that subscribe to no existing, non-empty stream get an empty assignment and do not
 *   count for balance; the others ("active" members) decide which builder runs.
 *
 * **Homogeneous** (all active members subscribe to the same existing streams), with `M` active
 * members, `P_t` shards of stream `t` and `P = Σ P_t`. Guaranteed:
 * - every member holds `floor(P_t/M)` or `floor(P_t/M) + 1` shards of every stream `t` (balanced
 *   per stream) and `floor(P/M)` or `floor(P/M) + 1` shards in total (balanced overall); members
 *   beyond the shard count get nothing;
 * - each member keeps its previous shards of a stream up to its quota there;
 * - among all assignments balanced that way, this one keeps the most previous shards, i.e. moves
 *   the fewest (exact search; only groups so large that it exceeds its budget fall back to the
 *   near-optimal greedy plan). So re-running on its own output changes nothing, and with a single
 *   stream, adding a member moves only the shards the newcomer receives and removing one moves only
 *   the shards it held.
 * - with several streams, per-stream balance can cost moves between remaining members that a
 *   totals-only rule (Kafka's) would avoid. Example: `s0` has 2 shards, `s1` and `s2` one each;
 *   targets were `m0 = s0/0`, `m1 = s0/1`, `m2 = s1/0 + s2/0`. When `m1` leaves, `s0` must split 1–1
 *   and so must the two single-shard streams' "+1"s, so `m2` hands `s1/0` to `m0` (Kafka would give
 *   `m0` both `s0` shards instead). Adding a member can likewise move a shard between existing
 *   members. docs/protocol.md §5.1 asks for per-stream balance, so it wins over that stickiness.
 *
 * **Heterogeneous**: Kafka's heterogeneous builder plus an exact final balancing step (see
 * {@link buildHeterogeneousTargets}): sticky (previous shards kept unless balance needs them), loads
 * as balanced as the subscriptions allow (largest load minimal, smallest maximal), and within one
 * of each other when every stream's subscribers share the same subscription.
 *
 * Time: about O(P + M log M) for homogeneous groups, plus O(M·S) per pass when the exact search
 * runs; heterogeneous adds O(Σ_t S_t log S_t) per balancing round (`S_t` subscribers of stream `t`,
 * at most 16 rounds) and O(M + Σ_t S_t) per move chain of the final step. 10,000 shards over 1,000
 * members take a few tens of milliseconds.
 *
 * @publicApi
 */
export class UniformAssignor implements ShardAssignor {
  /** The name members use to ask for this assignor. */
  static readonly NAME = 'uniform';

  readonly name = UniformAssignor.NAME;

  assign(input: AssignorInput): Map<string, Assignment> {
    const model = buildGroupModel(this.name, input);
    const ownership = resolvePreviousTargets(model);
    const active: number[] = [];
    model.subscriptions.forEach((s, i) => {
      if (s.length > 0) active.push(i);
    });
    const targets = isHomogeneous(active.map((i) => model.subscriptions[i] ?? []))
      ? buildHomogeneousTargets(model, ownership, active)
      : buildHeterogeneousTargets(model, ownership, active);

    const result = new Map<string, Assignment>();
    for (const member of model.members) result.set(member.memberId, EMPTY_ASSIGNMENT);
    active.forEach((i, k) => {
      const member = model.members[i];
      if (member) result.set(member.memberId, targets[k] ?? EMPTY_ASSIGNMENT);
    });
    return result;
  }
}
