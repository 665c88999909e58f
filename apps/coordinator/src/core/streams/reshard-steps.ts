import {
  parentShards,
  routingFunctionFor,
  ROUTING_SLOTS,
} from '@redis-stream-coordinator/nestjs/protocol';
import { CoordinatorError } from '../coordinator-error.js';
import {
  type AbandonedGroup,
  activeShardIds,
  type ReshardEvent,
  type ReshardEventType,
  type ReshardMode,
  type ReshardRecord,
  type ShardRecord,
  type StreamRecord,
} from './stream-record.js';

/**
 * The reshard state machine, pure: every function takes a stream record and returns the next one
 * (the caller persists it with compare-and-set) plus the events of the step. No function here
 * changes `version`; {@link withNextVersion} does, once per write.
 *
 * Steps: {@link beginReshard} (`preparing`) → {@link publishLayout} (`closing`) →
 * {@link markClosed} (`draining`) → {@link applyObservation}, repeatedly, until every old shard is
 * removed (`completing`) → {@link finishReshard} (`resharding = null`).
 */

/** What a reshard request asks for (already shape-checked at the HTTP edge). */
export interface ReshardRequest {
  readonly shards: number;
  readonly mode: ReshardMode;
}

/** A record plus the events of the step that produced it. */
export interface StepResult {
  readonly record: StreamRecord;
  readonly events: readonly ReshardEvent[];
}

/** Outcome of {@link beginReshard}. */
export type BeginOutcome =
  /** The stream already has that many shards and no reshard runs: nothing to do. */
  { readonly kind: 'unchanged' } | ({ readonly kind: 'started' } & StepResult);

/**
 * Starts a reshard of `record` to `request.shards` shards: reserves the new shard ids (they
 * continue after the highest id the stream ever had) and records the request (`preparing`).
 * Routing and shards are unchanged until {@link publishLayout}.
 *
 * @throws CoordinatorError `RESHARD_IN_PROGRESS` while another reshard runs; `INVALID_REQUEST`
 *   for a count that is not an integer in `1…maxShards`.
 */
export function beginReshard(
  record: StreamRecord,
  request: ReshardRequest,
  maxShards: number,
  now: number,
): BeginOutcome {
  const limit = Math.min(maxShards, ROUTING_SLOTS);
  if (!Number.isInteger(request.shards) || request.shards < 1 || request.shards > limit) {
    throw new CoordinatorError(
      'INVALID_REQUEST',
      `request body: field "shards" must be an integer between 1 and ${limit} (MAX_SHARDS), got ${String(request.shards)}`,
    );
  }
  const running = record.resharding;
  if (running) {
    throw new CoordinatorError(
      'RESHARD_IN_PROGRESS',
      `stream "${record.stream}" is already being resharded from ${running.fromShards.length} to ${running.toShards.length} shard(s) (state ${running.state}); wait until GET /v1/streams/${record.stream} shows "resharding": null`,
    );
  }
  const from = activeShardIds(record);
  if (from.length === request.shards) return { kind: 'unchanged' };
  const to = Array.from({ length: request.shards }, (_, i) => record.nextShardId + i);
  const resharding: ReshardRecord = {
    state: 'preparing',
    mode: request.mode,
    fromShards: from,
    toShards: to,
    startedAt: now,
    groups: [],
    drained: {},
    released: {},
    abandoned: {},
    idleSince: {},
    strict: [],
    idleReported: [],
    step: 0,
    log: [],
    mirrored: {},
  };
  const next: StreamRecord = {
    ...record,
    nextShardId: record.nextShardId + request.shards,
    resharding,
  };
  return {
    kind: 'started',
    ...appendEvents(next, now, [
      ['RESHARD_REQUESTED', { fromShards: from, toShards: to, mode: request.mode }],
    ]),
  };
}

/**
 * `preparing` → `closing`: publishes the new layout (routing epoch +1): the old shards become
 * `draining`, the new ones `active` with their parents (the old shards whose slot ranges overlap
 * theirs), and `groups` become the tracked groups; those of them in `idle` (no subscribed member
 * now) will read the change in strict order whatever its mode, so a group that comes back later
 * reads its old shards first. The caller has opened the new shards' meta hashes and created the
 * tracked groups' consumer groups on them before persisting this.
 */
export function publishLayout(
  record: StreamRecord,
  groups: readonly string[],
  now: number,
  idle: readonly string[] = [],
): StepResult {
  const r = expectState(record, 'preparing');
  const routing = routingFunctionFor(r.toShards);
  const parents = parentShards(record.routing.ranges, routing.ranges);
  const from = new Set(r.fromShards);
  const shards: ShardRecord[] = [
    ...record.shards.map((s) => (from.has(s.id) ? { ...s, state: 'draining' as const } : s)),
    ...r.toShards.map((id) => ({
      id,
      state: 'active' as const,
      parents: parents.get(id) ?? [],
      createdAt: now,
    })),
  ];
  const tracked = [...new Set(groups)].sort();
  const next: StreamRecord = {
    ...record,
    routingEpoch: record.routingEpoch + 1,
    shards,
    routing,
    resharding: {
      ...r,
      state: 'closing',
      groups: tracked,
      strict: tracked.filter((g) => idle.includes(g)),
      mirrored: Object.fromEntries(tracked.map((g) => [g, 0])),
    },
  };
  return appendEvents(next, now, [
    [
      'RESHARD_STARTED',
      {
        routingEpoch: next.routingEpoch,
        mode: r.mode,
        fromShards: r.fromShards,
        toShards: r.toShards,
        parents: Object.fromEntries([...parents].map(([id, p]) => [String(id), p])),
        groups: tracked,
      },
    ],
  ]);
}

/** `closing` → `draining`: every old shard refuses writes now (the caller has set `state=closed`). */
export function markClosed(record: StreamRecord, now: number): StepResult {
  const r = expectState(record, 'closing');
  const next: StreamRecord = { ...record, resharding: { ...r, state: 'draining' } };
  return appendEvents(next, now, [['RESHARD_SHARDS_CLOSED', { shards: r.fromShards }]]);
}

/** What a tracked group looks like right now, as far as the reshard cares. */
export interface GroupObservation {
  /** `active`: some member subscribes to the stream; `idle`: none does; `deleted`: no such group. */
  readonly status: 'active' | 'idle' | 'deleted';
  /** Old shards of the stream that a member of the group still holds (assigned or revoking). */
  readonly holds: ReadonlySet<number>;
}

/** One round of observations of the data plane and the groups (state `draining`). */
export interface ReshardObservation {
  readonly now: number;
  /** Old shard → groups whose consumer group on it has nothing left (read everything, acked everything). */
  readonly drained: ReadonlyMap<number, ReadonlySet<string>>;
  /** Tracked (and found) group → what it looks like; a group missing here is left as it was. */
  readonly groups: ReadonlyMap<string, GroupObservation>;
  /**
   * Existing groups not tracked yet that have a Redis consumer group on an old shard (read in this
   * round, before any shard is deleted) → those shards: they are tracked from now on.
   */
  readonly found?: ReadonlyMap<string, readonly number[]>;
  /** How long a waited-for group may have no subscribed member before `RESHARD_GROUP_IDLE` is logged. */
  readonly idleNoticeMs: number;
}

/** Result of {@link applyObservation}: the next record, its events, and the old shards to delete. */
export interface ObservationResult extends StepResult {
  /**
   * Old shards every waited-for group has drained and released: the caller deletes their Redis
   * keys (stream and meta; the dead-letter stream is kept) and then persists `record`, which no
   * longer lists them.
   */
  readonly remove: readonly number[];
}

/**
 * `draining`: records what was observed — groups found with a consumer group on an old shard
 * that were not tracked (tracked now, in strict order: an old shard is deleted only once every
 * group that reads it has drained it), deleted groups (abandoned: nobody can come back for them),
 * idle ones (never abandoned: `RESHARD_GROUP_IDLE` is logged once they have been idle for
 * `idleNoticeMs`, and their old shards are kept until they drain them or an admin abandons them,
 * see {@link abandonGroup}), (old shard, group) pairs newly drained, and pairs released (drained
 * in an earlier, persisted step and no longer held by any member: the group has recomputed its
 * target since) — removes the old shards every waited-for group has released, and moves to
 * `completing` when none is left. Returns the record unchanged (same object) when nothing changed.
 */
export function applyObservation(record: StreamRecord, obs: ReshardObservation): ObservationResult {
  const r = expectState(record, 'draining');
  const events: Array<[ReshardEventType, Record<string, unknown>]> = [];
  const draining = record.shards.filter((s) => s.state === 'draining').map((s) => s.id);
  // Also a group given up as deleted that exists again (re-created under the same id): DELETE
  // keeps its Redis consumer groups, so it resumes them and its backlog must stay.
  const late = [...(obs.found ?? [])]
    .filter(
      ([g, shards]) =>
        (!r.groups.includes(g) || r.abandoned[g]?.reason === 'deleted') &&
        shards.some((s) => draining.includes(s)),
    )
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const groups = [...new Set([...r.groups, ...late.map(([g]) => g)])].sort();
  const strict = [...new Set([...(r.strict ?? []), ...late.map(([g]) => g)])].sort();
  const mirrored: Record<string, number> = { ...r.mirrored };
  const abandoned: Record<string, AbandonedGroup> = { ...r.abandoned };
  for (const [group, shards] of late) {
    const recreated = abandoned[group] !== undefined;
    delete abandoned[group];
    mirrored[group] = mirrored[group] ?? 0;
    events.push([
      'RESHARD_GROUP_TRACKED',
      {
        group,
        shards: shards.filter((s) => draining.includes(s)),
        ...(recreated ? { recreated: true } : {}),
      },
    ]);
  }
  const idleSince: Record<string, number> = { ...r.idleSince };
  const reported = new Set(r.idleReported ?? []);
  for (const group of groups.filter((g) => abandoned[g] === undefined)) {
    const seen = obs.groups.get(group);
    if (!seen) continue;
    if (seen.status === 'active') {
      delete idleSince[group];
      reported.delete(group);
      continue;
    }
    if (seen.status === 'idle') {
      const since = idleSince[group] ?? obs.now;
      idleSince[group] = since;
      if (obs.now - since >= obs.idleNoticeMs && !reported.has(group)) {
        reported.add(group);
        events.push([
          'RESHARD_GROUP_IDLE',
          {
            group,
            idleMs: obs.now - since,
            shards: draining.filter((s) => !(r.drained[String(s)] ?? []).includes(group)),
          },
        ]);
      }
      continue;
    }
    abandoned[group] = { reason: 'deleted', at: obs.now };
    delete idleSince[group];
    reported.delete(group);
    events.push(['RESHARD_GROUP_ABANDONED', { group, reason: 'deleted' }]);
  }
  const waiting = groups.filter((g) => abandoned[g] === undefined);

  const drained = copyLists(r.drained);
  const released = copyLists(r.released);
  for (const shard of draining) {
    const key = String(shard);
    const done = obs.drained.get(shard);
    for (const group of waiting) {
      const list = drained[key] ?? [];
      if (done?.has(group) && !list.includes(group)) {
        drained[key] = [...list, group].sort();
        events.push(['RESHARD_SHARD_DRAINED', { shard, group }]);
      }
    }
    // Released: drained as of the persisted record (so every replica's view already dropped it)
    // and held by nobody in the group any more.
    for (const group of r.drained[key] ?? []) {
      const seen = obs.groups.get(group);
      const list = released[key] ?? [];
      if (!waiting.includes(group) || !seen || seen.holds.has(shard) || list.includes(group))
        continue;
      released[key] = [...list, group].sort();
      events.push(['RESHARD_SHARD_RELEASED', { shard, group }]);
    }
  }
  const remove = draining.filter((shard) =>
    waiting.every((g) => (released[String(shard)] ?? []).includes(g)),
  );
  for (const shard of remove) events.push(['RESHARD_SHARD_REMOVED', { shard }]);
  const shards = record.shards.filter((s) => !remove.includes(s.id));
  const done = !shards.some((s) => s.state === 'draining');
  if (done) {
    events.push([
      'RESHARD_COMPLETED',
      {
        fromShards: r.fromShards,
        toShards: r.toShards,
        tookMs: Math.max(0, obs.now - r.startedAt),
      },
    ]);
  }
  const changed = events.length > 0 || !sameNumbers(r.idleSince, idleSince);
  if (!changed) return { record, events: [], remove: [] };
  const next: StreamRecord = {
    ...record,
    shards,
    resharding: {
      ...r,
      state: done ? 'completing' : 'draining',
      groups,
      strict,
      mirrored,
      drained,
      released,
      abandoned,
      idleSince,
      idleReported: [...reported].sort(),
    },
  };
  return { ...appendEvents(next, obs.now, events), remove };
}

/** Outcome of {@link abandonGroup}. */
export type AbandonOutcome =
  /** The reshard had already stopped waiting for the group: nothing to do. */
  { readonly kind: 'unchanged' } | ({ readonly kind: 'abandoned' } & StepResult);

/**
 * An admin gives up a tracked group's unread messages in the old shards
 * (`POST /v1/streams/{stream}/groups/{group}/abandon`): the change stops waiting for it, it sees
 * only the new shards from now on, and the old shards it was the last to need are deleted at the
 * next drain step. Logged as `RESHARD_GROUP_ABANDONED` with reason `admin` and the old shards it
 * had not drained.
 *
 * Refused for a group with a member subscribed to the stream (`seen.active`): it drains its old
 * shards by itself, and abandoning it would delete the backlog it is reading — a typo or a stale
 * runbook must not do that. Stop its members (or delete the group) first.
 *
 * @throws CoordinatorError `NOT_FOUND` when no reshard runs or it does not track the group;
 *   `RESHARD_IN_PROGRESS` while it is still `preparing` (its groups are not known yet);
 *   `GROUP_NOT_EMPTY` when the group has a subscribed member.
 */
export function abandonGroup(
  record: StreamRecord,
  group: string,
  now: number,
  seen: { readonly active: boolean },
): AbandonOutcome {
  const r = record.resharding;
  if (!r) {
    throw new CoordinatorError(
      'NOT_FOUND',
      `stream "${record.stream}" has no reshard in progress, so no group's old shards are kept; nothing to abandon`,
    );
  }
  if (r.state === 'preparing') {
    throw new CoordinatorError(
      'RESHARD_IN_PROGRESS',
      `the reshard of stream "${record.stream}" is still preparing (its tracked groups are not known yet); retry in a moment`,
    );
  }
  if (!r.groups.includes(group)) {
    throw new CoordinatorError(
      'NOT_FOUND',
      `the reshard of stream "${record.stream}" does not track group "${group}" (it tracks: ${r.groups.join(', ') || 'none'}); nothing to abandon`,
    );
  }
  if (r.abandoned[group] !== undefined) return { kind: 'unchanged' };
  if (seen.active) {
    throw new CoordinatorError(
      'GROUP_NOT_EMPTY',
      `group "${group}" has a member subscribed to stream "${record.stream}" and drains its old shards by itself; abandoning it would delete what it is reading. Stop its members (or DELETE /v1/groups/${group}) first`,
    );
  }
  const shards = record.shards
    .filter((s) => s.state === 'draining' && !(r.drained[String(s.id)] ?? []).includes(group))
    .map((s) => s.id);
  const idleSince = { ...r.idleSince };
  delete idleSince[group];
  const next: StreamRecord = {
    ...record,
    resharding: {
      ...r,
      abandoned: { ...r.abandoned, [group]: { reason: 'admin', at: now } },
      idleSince,
      idleReported: (r.idleReported ?? []).filter((g) => g !== group),
    },
  };
  return {
    kind: 'abandoned',
    ...appendEvents(next, now, [['RESHARD_GROUP_ABANDONED', { group, reason: 'admin', shards }]]),
  };
}

/**
 * The events `group` has not had appended to its event log yet: every step after its cursor that
 * is about the whole change or about this group.
 */
export function pendingGroupEvents(record: StreamRecord, group: string): ReshardEvent[] {
  const r = record.resharding;
  if (!r || !r.groups.includes(group)) return [];
  const after = r.mirrored[group] ?? 0;
  return r.log.filter(
    (e) => e.step > after && (e.data.group === undefined || e.data.group === group),
  );
}

/**
 * Moves groups' event-log cursors (group → step now accounted for) and prunes the steps every
 * tracked group has had. Returns the record unchanged (same object) when no cursor moves.
 */
export function withMirrored(
  record: StreamRecord,
  cursors: ReadonlyMap<string, number>,
): StreamRecord {
  const r = record.resharding;
  if (!r) return record;
  const mirrored: Record<string, number> = { ...r.mirrored };
  let moved = false;
  for (const [group, step] of cursors) {
    if (!r.groups.includes(group)) continue;
    const target = Math.min(step, r.step);
    if (target > (mirrored[group] ?? 0)) {
      mirrored[group] = target;
      moved = true;
    }
  }
  if (!moved) return record;
  const floor = Math.min(...r.groups.map((g) => mirrored[g] ?? 0));
  return { ...record, resharding: { ...r, mirrored, log: r.log.filter((e) => e.step > floor) } };
}

/** True when every tracked group's event log has every step (the change may be finished). */
export function fullyMirrored(r: ReshardRecord): boolean {
  return r.groups.every((g) => (r.mirrored[g] ?? 0) >= r.step);
}

/** `completing` → done: `resharding = null`; only the new shards are left. */
export function finishReshard(record: StreamRecord): StreamRecord {
  expectState(record, 'completing');
  return { ...record, resharding: null };
}

/** The record to write on top of `base`: `next` with `version = base.version + 1`. */
export function withNextVersion(base: StreamRecord, next: StreamRecord): StreamRecord {
  return { ...next, version: base.version + 1 };
}

function expectState(record: StreamRecord, state: ReshardRecord['state']): ReshardRecord {
  const r = record.resharding;
  if (!r || r.state !== state) {
    throw new ReshardStateError(record.stream, state, r ? r.state : 'none');
  }
  return r;
}

/** A step was applied to a stream whose reshard is not in the state that step needs (a bug). */
export class ReshardStateError extends Error {
  override readonly name = 'ReshardStateError';

  constructor(stream: string, expected: string, actual: string) {
    super(
      `reshard step for stream "${stream}" needs state ${expected}, but the stream is in ${actual}`,
    );
  }
}

function appendEvents(
  record: StreamRecord,
  now: number,
  events: ReadonlyArray<readonly [ReshardEventType, Record<string, unknown>]>,
): StepResult {
  const r = record.resharding as ReshardRecord;
  const made = events.map(([type, data], i): ReshardEvent => ({
    step: r.step + i + 1,
    type,
    at: now,
    data: { stream: record.stream, ...data },
  }));
  return {
    record: {
      ...record,
      resharding: { ...r, step: r.step + made.length, log: [...r.log, ...made] },
    },
    events: made,
  };
}

function copyLists(
  lists: Readonly<Record<string, readonly string[]>>,
): Record<string, readonly string[]> {
  return { ...lists };
}

function sameNumbers(
  a: Readonly<Record<string, number>>,
  b: Readonly<Record<string, number>>,
): boolean {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}
