import { expect } from 'vitest';
import type {
  HeartbeatRequest,
  HeartbeatResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  type Assignment,
  EMPTY_ASSIGNMENT,
  equals,
  filter,
  fromWire,
  has,
  intersect,
  isEmpty,
  isSubset,
  overlaps,
  pairs,
  shardRef,
  size,
  subtract,
  toWire,
  union,
} from '../../apps/coordinator/src/core/assignment.js';
import type { ShardAssignor } from '../../apps/coordinator/src/core/assignors/shard-assignor.interface.js';
import { UniformAssignor } from '../../apps/coordinator/src/core/assignors/uniform.assignor.js';
import { CoordinatorError } from '../../apps/coordinator/src/core/coordinator-error.js';
import { groupStateName } from '../../apps/coordinator/src/core/group-state.js';
import type { GroupTransaction } from '../../apps/coordinator/src/core/group-transaction.js';
import type { MemberRecord } from '../../apps/coordinator/src/core/member.js';
import { restart } from './core-spec-helpers.js';
import { GroupSimulator, roundRobinAssignor, StaticCatalog, testRules } from './group-simulator.js';

/**
 * A model of a consumer group's member processes for the core's property tests: each process
 * behaves like a real member (keeps the epoch and shards it last got, acknowledges revocations
 * now or later, loses responses, sends partial requests, leaves, restarts, misbehaves on purpose),
 * every request is checked against an oracle of the protocol's refusals, and {@link Run.checkInvariants}
 * checks the group after every step. {@link Run.quiesce} lets everyone behave until the group
 * must have converged.
 */

/** Stream names a run may use. */
export const STREAMS = ['s0', 's1', 's2'] as const;

/** A cheap assertion for the hot paths (Vitest's `expect` is too slow for ~10⁵ checks). */
function check(ok: boolean, message: () => string): void {
  if (!ok) throw new Error(message());
}

/** Map equality with primitive values. */
function sameEntries<V>(a: ReadonlyMap<string, V>, b: ReadonlyMap<string, V>): boolean {
  if (a.size !== b.size) return false;
  for (const [k, v] of a) if (b.get(k) !== v) return false;
  return true;
}

const show = (a: Assignment): string => JSON.stringify(toWire(a));
const QUIESCE_ROUNDS = 12;

// ---------------------------------------------------------------------------------------------
// Model

export interface SlotConfig {
  readonly isStatic: boolean;
  /** Bit mask over the group's streams (never 0). */
  readonly mask: number;
}

export interface RunConfig {
  readonly streamCount: number;
  /** Initial shard count per stream; -1 = the stream does not exist yet. */
  readonly initialShards: readonly number[];
  readonly slots: readonly SlotConfig[];
  readonly homogeneous: boolean;
  readonly groupMaxSize: number;
  readonly assignor: 'round-robin' | 'uniform';
}

export type Op =
  | { readonly t: 'join'; readonly slot: number; readonly lose: boolean }
  | {
      readonly t: 'hb';
      readonly slot: number;
      /** Finish pending revocations before sending (else keep processing them a while). */
      readonly ack: boolean;
      readonly partial: boolean;
      readonly omitOwned: boolean;
      readonly lose: boolean;
    }
  | { readonly t: 'dup'; readonly slot: number }
  | { readonly t: 'leave'; readonly slot: number }
  | { readonly t: 'away'; readonly slot: number }
  | {
      readonly t: 'replace';
      readonly slot: number;
      readonly lose: boolean;
      readonly mask: number | null;
    }
  | { readonly t: 'expire'; readonly slot: number }
  | { readonly t: 'timeout'; readonly slot: number }
  | { readonly t: 'subscribe'; readonly slot: number; readonly mask: number }
  | { readonly t: 'reshard'; readonly stream: number; readonly count: number }
  /** A misbehaving process: a future or stale epoch, or a removed member still heartbeating. */
  | { readonly t: 'zombie'; readonly slot: number; readonly kind: ZombieKind }
  | { readonly t: 'restart' };

/**
 * future: an epoch above its own; stale: the epoch below its own; greedy: the epoch below its own
 * claiming a shard it was never given; ghost: a removed member still heartbeating.
 */
export type ZombieKind = 'future' | 'stale' | 'greedy' | 'ghost';

/** One member process slot (a static slot keeps its instance id across member ids). */
export interface Client {
  readonly slot: number;
  readonly instanceId: string | null;
  generation: number;
  memberId: string;
  streams: string[];
  /** out: not a member (never joined, left, removed, or fenced and wanting back); away: -2. */
  status: 'out' | 'in' | 'away';
  /** Wants to (re)join at the next opportunity (fenced, or a join whose response was lost). */
  wantsIn: boolean;
  epoch: number;
  /** The last assignment received: what it may process. */
  assignment: Assignment;
  /** Shards no longer assigned that it has not finished revoking yet. */
  revoking: Assignment;
  /** Its view matches the coordinator's (last response received, nothing lost since). */
  synced: boolean;
}

const processing = (c: Client): Assignment => union(c.assignment, c.revoking);

/** What the runs exercised, so the suite can fail when the generator stops reaching a path. */
export interface Coverage {
  requests: number;
  codes: Set<string>;
  staleAccepted: number;
  unrevoked: number;
  unreleased: number;
  events: number;
  replaced: number;
  temporaryLeaves: number;
  leaves: number;
  removals: number;
  restarts: number;
  reshards: number;
  quiesceRounds: number;
}

export class Run {
  readonly catalog = new StaticCatalog();
  readonly sim: GroupSimulator;
  readonly clients: Client[];
  private readonly nextShardId: number[] = [];
  private readonly lastEpoch = new Map<string, number>();
  private readonly lastSeen = new Map<string, { epoch: number; state: string }>();
  private lastGroupEpoch = 0;
  private lastAssignmentEpoch = 0;
  readonly streams: string[];

  constructor(
    readonly cfg: RunConfig,
    readonly stats: Coverage,
  ) {
    this.streams = STREAMS.slice(0, cfg.streamCount);
    this.streams.forEach((s, i) => {
      const n = cfg.initialShards[i] ?? -1;
      this.nextShardId[i] = Math.max(n, 0);
      if (n >= 0) this.catalog.set(s, [...Array(n).keys()]);
    });
    const assignor: ShardAssignor =
      cfg.assignor === 'uniform' ? new UniformAssignor() : roundRobinAssignor;
    this.sim = new GroupSimulator(this.catalog, {
      ...testRules([assignor]),
      groupMaxSize: cfg.groupMaxSize,
    });
    this.clients = cfg.slots.map((slot, i) => ({
      slot: i,
      instanceId: slot.isStatic ? `pod-${i}` : null,
      generation: 0,
      memberId: `m${i}`,
      streams: this.streamsOf(cfg.homogeneous ? (1 << cfg.streamCount) - 1 : slot.mask),
      status: 'out',
      wantsIn: true,
      epoch: 0,
      assignment: EMPTY_ASSIGNMENT,
      revoking: EMPTY_ASSIGNMENT,
      synced: false,
    }));
  }

  streamsOf(mask: number): string[] {
    const out = this.streams.filter((_, i) => (mask & (1 << i)) !== 0);
    return out.length > 0 ? out : [this.streams[0] as string];
  }

  client(slot: number): Client {
    return this.clients[slot % this.clients.length] as Client;
  }

  member(id: string): MemberRecord | undefined {
    return this.sim.group.members.get(id);
  }

  // -------------------------------------------------------------------------------------------
  // Sending

  /**
   * Sends one request, checks the outcome against the protocol's oracle (which error, if any)
   * and the response invariants, and returns the response (or the refusal code).
   */
  send(
    client: Client,
    req: HeartbeatRequest,
    honest = true,
  ): { res?: HeartbeatResponse; code?: string; wrote: boolean } {
    this.stats.requests++;
    const expected = this.expectedRefusal(req);
    const before = this.member(req.memberId);
    const version = this.sim.version;
    let sent: ReturnType<GroupSimulator['heartbeat']>;
    try {
      sent = this.sim.heartbeat(req);
    } catch (error) {
      if (!(error instanceof CoordinatorError)) throw error;
      check(
        error.code === expected,
        () => `${JSON.stringify(req)} refused with ${error.code}, expected ${expected}`,
      );
      check(this.sim.version === version, () => 'a refused request wrote something');
      // A member whose view is current is never refused.
      check(
        !(honest && client.synced && client.status === 'in' && req.memberEpoch > 0 && before),
        () => `synced member ${req.memberId} refused with ${error.code}`,
      );
      this.stats.codes.add(error.code);
      return { code: error.code, wrote: false };
    }
    check(expected === null, () => `${JSON.stringify(req)} accepted, expected ${expected}`);
    const wrote = this.sim.version !== version;
    if (before && req.memberEpoch > 0 && req.memberEpoch < before.memberEpoch)
      this.stats.staleAccepted++;
    if (sent.outcome.kind === 'leave') {
      const r = sent.outcome.response;
      check(
        r.memberId === req.memberId && r.memberEpoch === req.memberEpoch,
        () => `leave response ${JSON.stringify(r)}`,
      );
      return { wrote };
    }
    const res = sent.outcome.response;
    this.checkResponse(req, res, before, sent.txn);
    return { res, wrote };
  }

  /** The refusal docs/protocol.md §2.4 and §4.4 prescribe (Kafka's fencing), or `null`. */
  expectedRefusal(req: HeartbeatRequest): string | null {
    const g = this.sim.group;
    if (!this.sim.exists && req.memberEpoch !== 0) return 'GROUP_ID_NOT_FOUND';
    const existing = g.members.get(req.memberId);
    if (req.memberEpoch === 0) {
      if (req.instanceId !== undefined) {
        if (existing?.instanceId && existing.instanceId !== req.instanceId)
          return 'FENCED_INSTANCE_ID';
        const holderId = g.staticMembers.get(req.instanceId);
        const holder = holderId === undefined ? undefined : g.members.get(holderId);
        if (holder) {
          if (holder.memberEpoch === -2) return null;
          return holderId === req.memberId ? null : 'UNRELEASED_INSTANCE_ID';
        }
      }
      if (existing) return null;
      return g.members.size >= this.cfg.groupMaxSize ? 'GROUP_MAX_SIZE_REACHED' : null;
    }
    if (req.instanceId !== undefined) {
      const holderId = g.staticMembers.get(req.instanceId);
      if (holderId === undefined) return 'UNKNOWN_MEMBER_ID';
      if (holderId !== req.memberId) return 'FENCED_INSTANCE_ID';
    }
    if (!existing) return 'UNKNOWN_MEMBER_ID';
    if (req.memberEpoch < 0) return null;
    if (req.memberEpoch > existing.memberEpoch) return 'FENCED_MEMBER_EPOCH';
    if (req.memberEpoch < existing.memberEpoch) {
      const owned =
        req.ownedShards === undefined
          ? undefined
          : filter(fromWire(req.ownedShards), (s, p) => this.catalog.knows(s, p));
      const lostResponse =
        req.memberEpoch === existing.previousMemberEpoch &&
        owned !== undefined &&
        isSubset(owned, existing.assigned);
      if (!lostResponse) return 'FENCED_MEMBER_EPOCH';
    }
    return null;
  }

  /** (e) and the response shape rules of docs/protocol.md §3.4. */
  checkResponse(
    req: HeartbeatRequest,
    res: HeartbeatResponse,
    before: MemberRecord | undefined,
    txn: GroupTransaction,
  ): void {
    const m = this.member(res.memberId);
    if (!m) throw new Error(`response for ${res.memberId}, which is not a member`);
    const who = `${m.memberId} after ${JSON.stringify(req)}`;
    check(
      res.memberEpoch === m.memberEpoch,
      () => `${who}: response epoch ${res.memberEpoch} ≠ ${m.memberEpoch}`,
    );
    const full =
      req.rebalanceTimeoutMs !== undefined &&
      req.subscribedStreams !== undefined &&
      req.ownedShards !== undefined;
    check(
      !(req.memberEpoch === 0 || full) || res.assignment !== undefined,
      () => `${who}: assignment missing`,
    );
    const owners = this.sim.group.owners;
    if (res.assignment) {
      const given = fromWire(res.assignment.shards);
      check(
        equals(given, m.assigned),
        () => `${who}: sent ${show(given)}, committed ${show(m.assigned)}`,
      );
      check(
        !overlaps(given, m.pendingRevocation),
        () => `${who}: a shard pending revocation was sent`,
      );
      for (const e of res.assignment.shards) {
        const keys = e.shards.map((s) => this.catalog.shardKey(e.stream, s));
        check(
          JSON.stringify(keys) === JSON.stringify(e.keys),
          () => `${who}: keys ${JSON.stringify(e.keys)}`,
        );
      }
      for (const [stream, shard] of pairs(given)) {
        const owner = owners.get(shardRef(stream, shard))?.memberId;
        check(owner === m.memberId, () => `${who}: sent ${stream}/${shard}, held by ${owner}`);
      }
    } else if (before) {
      check(
        equals(before.assigned, m.assigned),
        () => `${who}: assignment changed but was omitted`,
      );
    }
    check(equals(fromWire(res.diff.revoking), m.pendingRevocation), () => `${who}: diff.revoking`);
    const previously = req.memberEpoch === 0 || !before ? EMPTY_ASSIGNMENT : before.assigned;
    check(
      equals(fromWire(res.diff.added), subtract(m.assigned, previously)),
      () => `${who}: diff.added`,
    );
    const target = this.sim.group.targets.get(m.memberId) ?? EMPTY_ASSIGNMENT;
    const awaiting = fromWire(res.diff.awaitingRelease);
    check(
      isSubset(awaiting, subtract(target, m.assigned)),
      () => `${who}: diff.awaitingRelease ⊄ target − assigned`,
    );
    for (const [stream, shard] of pairs(subtract(target, m.assigned))) {
      const owner = owners.get(shardRef(stream, shard))?.memberId;
      const held = owner !== undefined && owner !== m.memberId;
      check(
        held === has(awaiting, stream, shard),
        () => `${who}: awaitingRelease wrong for ${stream}/${shard}`,
      );
    }
    if (m.state === 'UNREVOKED_SHARDS') this.stats.unrevoked++;
    if (m.state === 'UNRELEASED_SHARDS') this.stats.unreleased++;
    this.stats.events += txn.events.length;
  }

  /** What a client does with a response it received. */
  adopt(client: Client, res: HeartbeatResponse, ackNow: boolean): void {
    client.epoch = res.memberEpoch;
    if (res.assignment) {
      const next = fromWire(res.assignment.shards);
      client.revoking = subtract(processing(client), next);
      client.assignment = next;
    }
    if (ackNow) client.revoking = EMPTY_ASSIGNMENT;
    client.synced = true;
  }

  /** After FENCED_MEMBER_EPOCH / UNKNOWN_MEMBER_ID: drop everything as lost, rejoin later. */
  dropAll(client: Client, status: Client['status'], wantsIn: boolean): void {
    client.assignment = EMPTY_ASSIGNMENT;
    client.revoking = EMPTY_ASSIGNMENT;
    client.epoch = 0;
    client.status = status;
    client.wantsIn = wantsIn;
    client.synced = false;
  }

  onRefusal(client: Client, code: string): void {
    if (
      code === 'FENCED_MEMBER_EPOCH' ||
      code === 'UNKNOWN_MEMBER_ID' ||
      code === 'GROUP_ID_NOT_FOUND'
    ) {
      this.dropAll(client, 'out', true);
    } else {
      // Fatal for this attempt (max size, instance id in use): the process gives up.
      this.dropAll(client, 'out', false);
    }
  }

  fullRequest(client: Client, epoch: number, owned: Assignment): HeartbeatRequest {
    return {
      memberId: client.memberId,
      memberEpoch: epoch,
      rebalanceTimeoutMs: 30000,
      subscribedStreams: [...client.streams],
      ownedShards: toWire(owned),
      ...(client.instanceId !== null ? { instanceId: client.instanceId } : {}),
    };
  }

  // -------------------------------------------------------------------------------------------
  // Operations

  join(client: Client, lose: boolean): void {
    this.dropAll(client, 'out', true);
    const out = this.send(client, this.fullRequest(client, 0, EMPTY_ASSIGNMENT));
    if (out.code !== undefined) return this.onRefusal(client, out.code);
    if (lose) return; // still 'out', wants in: it retries the join
    client.status = 'in';
    client.wantsIn = false;
    this.adopt(client, out.res as HeartbeatResponse, false);
  }

  heartbeat(client: Client, op: Extract<Op, { t: 'hb' }>): void {
    if (op.ack) client.revoking = EMPTY_ASSIGNMENT;
    const owned = processing(client);
    const full = !op.partial || !client.synced;
    const req: HeartbeatRequest = full
      ? this.fullRequest(client, client.epoch, owned)
      : {
          memberId: client.memberId,
          memberEpoch: client.epoch,
          ...(op.omitOwned ? {} : { ownedShards: toWire(owned) }),
        };
    const out = this.send(client, req);
    if (out.code !== undefined) return this.onRefusal(client, out.code);
    if (op.lose) {
      client.synced = false;
      return;
    }
    this.adopt(client, out.res as HeartbeatResponse, false);
  }

  duplicate(client: Client): void {
    const req = this.fullRequest(client, client.epoch, processing(client));
    const first = this.send(client, req);
    const second = this.send(client, req);
    expect(second.code).toBe(first.code);
    if (first.code !== undefined) return this.onRefusal(client, first.code);
    const a = first.res as HeartbeatResponse;
    const b = second.res as HeartbeatResponse;
    expect(b.memberEpoch).toBe(a.memberEpoch);
    expect(b.assignment).toEqual(a.assignment);
    expect(second.wrote, 'a duplicate full heartbeat writes nothing').toBe(false);
    if (!first.wrote) expect(b).toEqual(a);
    this.adopt(client, a, false);
    this.adopt(client, b, false);
  }

  step(op: Op): void {
    if (op.t === 'restart') {
      this.stats.restarts++;
      return restart(this.sim);
    }
    if (op.t === 'reshard') {
      this.stats.reshards++;
      return this.reshard(op.stream, op.count);
    }
    const client = this.client(op.slot);
    switch (op.t) {
      case 'join':
        // A process (re)starting: a fresh join, a rejoin of a live member (KAFKA-19233) or of a
        // static member back from -2 under the same member id.
        return this.join(client, op.lose);
      case 'hb':
        if (client.status === 'in') return this.heartbeat(client, op);
        if (client.wantsIn) return this.join(client, op.lose);
        return;
      case 'dup':
        // Only a member whose view is current: a lost-response retry may be fenced the second time.
        if (client.status === 'in' && client.synced) this.duplicate(client);
        return;
      case 'leave': {
        if (client.status !== 'in') return;
        const out = this.send(client, {
          memberId: client.memberId,
          memberEpoch: -1,
          ...(client.instanceId !== null ? { instanceId: client.instanceId } : {}),
        });
        this.dropAll(client, 'out', false);
        if (out.code === undefined) {
          this.stats.leaves++;
          expect(this.member(client.memberId)).toBeUndefined();
        }
        return;
      }
      case 'away': {
        if (client.status !== 'in' || client.instanceId === null) return;
        const out = this.send(client, {
          memberId: client.memberId,
          memberEpoch: -2,
          instanceId: client.instanceId,
        });
        if (out.code !== undefined) return this.onRefusal(client, out.code);
        this.dropAll(client, 'away', false);
        this.stats.temporaryLeaves++;
        expect(this.member(client.memberId)?.memberEpoch).toBe(-2);
        return;
      }
      case 'replace': {
        if (client.instanceId === null) return;
        // A new process for the same instance id, under a new member id.
        const snapshot = { ...client };
        client.generation += 1;
        client.memberId = `m${client.slot}.${client.generation}`;
        if (op.mask !== null && !this.cfg.homogeneous) client.streams = this.streamsOf(op.mask);
        const away = this.member(snapshot.memberId)?.memberEpoch === -2;
        this.join(client, op.lose);
        if (away && (client.status === 'in' || client.wantsIn)) this.stats.replaced++;
        if (client.status === 'out' && !client.wantsIn) {
          // Refused (UNRELEASED_INSTANCE_ID while the old one lives): the old process goes on.
          Object.assign(client, snapshot);
        }
        return;
      }
      case 'expire':
      case 'timeout': {
        const m = this.member(client.memberId);
        if (!m) return;
        if (op.t === 'timeout' && m.state !== 'UNREVOKED_SHARDS') return;
        this.sim.remove(client.memberId, op.t === 'expire' ? 'expiry' : 'rebalance-timeout');
        this.stats.removals++;
        expect(this.member(client.memberId)).toBeUndefined();
        // The process self-fences (its session lapsed) and comes back later.
        this.dropAll(client, 'out', true);
        return;
      }
      case 'subscribe': {
        if (client.status !== 'in' || this.cfg.homogeneous) return;
        client.streams = this.streamsOf(op.mask);
        return this.heartbeat(client, {
          t: 'hb',
          slot: op.slot,
          ack: false,
          partial: false,
          omitOwned: false,
          lose: false,
        });
      }
      case 'zombie':
        return this.zombie(client, op.kind);
    }
  }

  zombie(client: Client, kind: ZombieKind): void {
    if (kind === 'ghost') {
      // A process that missed its own removal (or leave) keeps heartbeating, owning nothing.
      if (client.status !== 'out' || this.member(client.memberId)) return;
      const out = this.send(
        client,
        { memberId: client.memberId, memberEpoch: 1, ownedShards: [] },
        false,
      );
      check(out.code !== undefined, () => `ghost ${client.memberId} accepted`);
      return;
    }
    if (client.status !== 'in') return;
    const epoch = kind === 'future' ? client.epoch + 1 : client.epoch - 1;
    if (epoch <= 0) return;
    let owned = processing(client);
    if (kind === 'greedy') {
      const held = union(owned, this.member(client.memberId)?.assigned ?? EMPTY_ASSIGNMENT);
      const extra = [...this.catalog.streams].flatMap(([s, shards]) =>
        shards.filter((p) => !has(held, s, p)).map((p) => [s, p] as const),
      )[0];
      if (!extra) return;
      owned = union(owned, new Map([[extra[0], [extra[1]]]]));
    }
    const out = this.send(client, this.fullRequest(client, epoch, owned), false);
    if (out.code !== undefined) return this.onRefusal(client, out.code);
    check(kind !== 'greedy', () => `greedy claim of ${client.memberId} accepted`);
    this.adopt(client, out.res as HeartbeatResponse, false);
  }

  /**
   * A stream's shard set changes: grows with fresh ids (never reused, docs/protocol.md §8.2) or
   * shrinks.
   */
  reshard(index: number, count: number): void {
    const i = index % this.streams.length;
    const stream = this.streams[i] as string;
    const current = this.catalog.streams.get(stream) ?? [];
    let next: number[];
    if (count >= current.length) {
      next = [...current];
      let id = this.nextShardId[i] as number;
      while (next.length < count) next.push(id++);
      this.nextShardId[i] = id;
    } else {
      next = current.slice(0, count);
    }
    this.catalog.set(stream, next);
  }

  // -------------------------------------------------------------------------------------------
  // Invariants

  checkInvariants(): void {
    const g = this.sim.group;
    // (a) one owner per shard; the owner index equals one recomputed from scratch (and so do the
    // static-member and subscription indexes).
    const owners = new Map<string, string>();
    const statics = new Map<string, string>();
    const subs = new Map<string, number>();
    for (const m of g.members.values()) {
      const id = m.memberId;
      check(!overlaps(m.assigned, m.pendingRevocation), () => `${id}: assigned ∩ pending ≠ ∅`);
      for (const [stream, shard] of pairs(union(m.assigned, m.pendingRevocation))) {
        const ref = shardRef(stream, shard);
        const other = owners.get(ref);
        // (b) nobody is given a shard another member still holds.
        check(other === undefined, () => `${stream}/${shard} held by ${other} and ${id}`);
        owners.set(ref, id);
      }
      if (m.instanceId !== null) statics.set(m.instanceId, id);
      for (const s of m.subscribedStreams) subs.set(s, (subs.get(s) ?? 0) + 1);
      check(
        m.state === 'UNREVOKED_SHARDS' || isEmpty(m.pendingRevocation),
        () => `${id}: pending outside UNREVOKED`,
      );
      check(m.memberEpoch !== -2 || isEmpty(m.pendingRevocation), () => `${id}: pending at -2`);
      check(
        (m.state === 'UNREVOKED_SHARDS' && m.memberEpoch !== -2) === (m.revokeStartedAt !== null) ||
          m.memberEpoch === -2,
        () => `${id}: rebalance timer ${m.revokeStartedAt} in ${m.state}`,
      );
    }
    const indexed = new Map([...g.owners].map(([ref, o]) => [ref, o.memberId] as const));
    check(
      sameEntries(indexed, owners),
      () => `owner index ${JSON.stringify([...indexed])} ≠ ${JSON.stringify([...owners])}`,
    );
    check(sameEntries(g.staticMembers, statics), () => 'static member index out of step');
    check(sameEntries(g.subscriptionCounts, subs), () => 'subscription counts out of step');

    // (c) epochs never go back; (d) memberEpoch ≤ assignmentEpoch ≤ groupEpoch (-2 aside).
    const { groupEpoch, assignmentEpoch } = g.meta;
    check(groupEpoch >= this.lastGroupEpoch, () => `group epoch went back to ${groupEpoch}`);
    check(
      assignmentEpoch >= this.lastAssignmentEpoch,
      () => `assignment epoch went back to ${assignmentEpoch}`,
    );
    check(
      assignmentEpoch <= groupEpoch,
      () => `assignment epoch ${assignmentEpoch} > group epoch ${groupEpoch}`,
    );
    this.lastGroupEpoch = groupEpoch;
    this.lastAssignmentEpoch = assignmentEpoch;
    for (const id of Array.from(this.lastEpoch.keys()))
      if (!g.members.has(id)) this.lastEpoch.delete(id);
    for (const m of g.members.values()) {
      if (m.memberEpoch === -2) continue;
      const last = this.lastEpoch.get(m.memberId) ?? 0;
      check(
        m.memberEpoch >= last,
        () => `${m.memberId}: epoch went back from ${last} to ${m.memberEpoch}`,
      );
      check(
        m.memberEpoch <= assignmentEpoch,
        () => `${m.memberId}: epoch ${m.memberEpoch} > ${assignmentEpoch}`,
      );
      this.lastEpoch.set(m.memberId, m.memberEpoch);
    }
    // The epoch never changes inside UNREVOKED (KAFKA-19974) and moves only once nothing must
    // still be revoked (docs/protocol.md §4.1).
    for (const m of g.members.values()) {
      const seen = this.lastSeen.get(m.memberId);
      if (seen && seen.epoch > 0 && m.memberEpoch > 0 && m.memberEpoch !== seen.epoch) {
        check(m.state !== 'UNREVOKED_SHARDS', () => `${m.memberId}: epoch moved into UNREVOKED`);
      }
      if (
        seen?.state === 'UNREVOKED_SHARDS' &&
        m.state === 'UNREVOKED_SHARDS' &&
        m.memberEpoch > 0
      ) {
        check(m.memberEpoch === seen.epoch, () => `${m.memberId}: epoch moved inside UNREVOKED`);
      }
    }
    this.lastSeen.clear();
    for (const m of g.members.values()) {
      this.lastSeen.set(m.memberId, { epoch: m.memberEpoch, state: m.state });
    }

    // Targets (absent = empty): only for members, disjoint, only subscribed streams.
    const targeted = new Set<string>();
    for (const [id, t] of g.targets) {
      const m = g.members.get(id);
      check(m !== undefined, () => `target of non-member ${id}`);
      for (const [stream, shard] of pairs(t)) {
        check(
          m?.subscribedStreams.includes(stream) === true,
          () => `${id} targeted on unsubscribed ${stream}`,
        );
        const ref = shardRef(stream, shard);
        check(!targeted.has(ref), () => `${stream}/${shard} in two targets`);
        targeted.add(ref);
      }
    }

    // Clients: no two processes ever work on the same shard, a process works only on shards the
    // coordinator has it hold, and a synced process sees exactly what the coordinator has.
    const working = new Map<string, string>();
    for (const c of this.clients) {
      for (const [stream, shard] of pairs(processing(c))) {
        const ref = shardRef(stream, shard);
        const other = working.get(ref);
        check(
          other === undefined,
          () => `${stream}/${shard} processed by ${other} and ${c.memberId}`,
        );
        working.set(ref, c.memberId);
        if (this.catalog.knows(stream, shard)) {
          check(
            owners.get(ref) === c.memberId,
            () => `${c.memberId} processes ${ref}, held by ${owners.get(ref)}`,
          );
        }
      }
      if (c.status === 'in' && c.synced) {
        const m = this.member(c.memberId);
        check(m !== undefined, () => `synced client ${c.memberId} is not a member`);
        check(
          c.epoch === m?.memberEpoch,
          () => `${c.memberId}: client epoch ${c.epoch} ≠ ${m?.memberEpoch}`,
        );
        check(
          equals(c.assignment, m?.assigned ?? EMPTY_ASSIGNMENT),
          () => `${c.memberId}: client view differs`,
        );
      }
    }
  }

  /** (f) every process behaves; the group must converge. */
  quiesce(): void {
    for (const c of this.clients) {
      if (c.status === 'away') {
        c.generation += 1;
        c.memberId = `m${c.slot}.${c.generation}`;
        this.join(c, false);
      } else if (c.status === 'out' && c.wantsIn) {
        this.join(c, false);
      }
      this.checkInvariants();
    }
    // Members no process drives any more (a replaced process gave up) expire.
    const driven = new Set(this.clients.filter((c) => c.status === 'in').map((c) => c.memberId));
    for (const id of Array.from(this.sim.group.members.keys())) {
      if (!driven.has(id)) this.sim.remove(id, 'expiry');
      this.checkInvariants();
    }
    let quiet = false;
    for (let round = 0; round < QUIESCE_ROUNDS && !quiet; round++) {
      const version = this.sim.version;
      for (const c of this.clients) {
        if (c.status !== 'in') continue;
        c.revoking = EMPTY_ASSIGNMENT;
        const out = this.send(c, this.fullRequest(c, c.epoch, c.assignment));
        if (out.code !== undefined) {
          // Only a member that lost responses may be fenced (send() checks that): it rejoins.
          this.onRefusal(c, out.code);
          this.join(c, false);
          expect(c.status, `rejoin of ${c.memberId} after ${out.code}`).toBe('in');
        } else {
          this.adopt(c, out.res as HeartbeatResponse, true);
        }
        this.checkInvariants();
      }
      quiet = this.sim.version === version && this.stateName() !== 'RECONCILING';
      this.stats.quiesceRounds++;
    }
    const g = this.sim.group;
    const state = this.stateName();
    expect(state).toBe(g.members.size === 0 ? 'EMPTY' : 'STABLE');
    expect(quiet, 'converged within the round bound').toBe(true);
    // Every shard of every subscribed, existing stream is owned by exactly one member.
    const expected = new Set<string>();
    for (const s of g.subscriptionCounts.keys()) {
      for (const shard of this.catalog.streams.get(s) ?? []) expected.add(shardRef(s, shard));
    }
    expect(new Set(g.owners.keys())).toEqual(expected);
    for (const m of g.members.values()) {
      expect(m.state).toBe('STABLE');
      expect(m.memberEpoch).toBe(g.meta.assignmentEpoch);
      expect(equals(m.assigned, g.targets.get(m.memberId) ?? EMPTY_ASSIGNMENT)).toBe(true);
    }
    for (const c of this.clients) {
      if (c.status === 'in')
        expect(equals(processing(c), this.member(c.memberId)?.assigned ?? EMPTY_ASSIGNMENT)).toBe(
          true,
        );
      else expect(isEmpty(processing(c))).toBe(true);
    }
    if (this.cfg.assignor === 'uniform') this.checkBalance();
  }

  /** Uniform on a homogeneous group: sizes within one, per stream and overall. */
  checkBalance(): void {
    const members = [...this.sim.group.members.values()];
    if (members.length === 0) return;
    const first = members[0]?.subscribedStreams.join(',');
    if (!members.every((m) => m.subscribedStreams.join(',') === first)) return;
    const spread = (xs: number[]): number => Math.max(...xs) - Math.min(...xs);
    expect(
      spread(members.map((m) => size(m.assigned))),
      'total sizes within one',
    ).toBeLessThanOrEqual(1);
    for (const s of members[0]?.subscribedStreams ?? []) {
      const only = (a: Assignment): Assignment =>
        intersect(a, new Map([[s, this.catalog.streams.get(s) ?? []]]));
      expect(
        spread(members.map((m) => size(only(m.assigned)))),
        `stream ${s} within one`,
      ).toBeLessThanOrEqual(1);
    }
  }

  stateName(): string {
    const g = this.sim.group;
    return groupStateName(g.meta, g.members.values(), g.members.size);
  }
}

/** Empty coverage counters. */
export function newCoverage(): Coverage {
  return {
    requests: 0,
    codes: new Set(),
    staleAccepted: 0,
    unrevoked: 0,
    unreleased: 0,
    events: 0,
    replaced: 0,
    temporaryLeaves: 0,
    leaves: 0,
    removals: 0,
    restarts: 0,
    reshards: 0,
    quiesceRounds: 0,
  };
}
