import type { Assignment } from '../assignment.js';

/**
 * One member as an assignor sees it.
 *
 * @publicApi
 */
export interface AssignorMember {
  readonly memberId: string;
  /** Static membership id, or `null` for a dynamic member. */
  readonly instanceId: string | null;
  /** Placement hint sent by the member, or `null`. */
  readonly rackId: string | null;
  /** Streams the member handles, sorted by name. */
  readonly subscribedStreams: readonly string[];
  /**
   * The member's previous **target** (not what it owns now). A static member that rejoined under a
   * new member id inherits the old id's target. Sticky assignors start from this.
   */
  readonly previousTarget: Assignment;
}

/**
 * Input of one target computation.
 *
 * @publicApi
 */
export interface AssignorInput {
  /** Every member of the group, iterated in ascending member id order. */
  readonly members: ReadonlyMap<string, AssignorMember>;
  /**
   * Every stream at least one member subscribes to and that exists, with the shard ids the group
   * may consume now (ascending). Streams that do not exist yet are absent.
   */
  readonly streams: ReadonlyMap<string, readonly number[]>;
}

/**
 * A server-side assignor: computes the target assignment of a whole group.
 *
 * Contract (checked by the coordinator's property tests for the built-in ones):
 * - returns an entry for every member of `input.members` (an empty assignment is fine);
 * - assigns a shard only to a member that subscribes to its stream;
 * - assigns every shard of every stream in `input.streams` to exactly one member (provided some
 *   member subscribes to it) and never a shard that is not in `input.streams`;
 * - is deterministic: the same input gives the same output;
 * - is pure: no I/O, no clocks, no randomness. It runs inside the heartbeat that needs it.
 *
 * Register a custom one by decorating a Nest provider in the coordinator app with
 * `@ShardAssignorProvider()`; members opt in by naming it in their heartbeat's `assignor` field.
 *
 * @publicApi
 */
export interface ShardAssignor {
  /** The name members put in `assignor`. 1–255 printable ASCII characters. */
  readonly name: string;
  /** Computes the full target: member id → shards. */
  assign(input: AssignorInput): Map<string, Assignment>;
}
