import { CoordinatorError } from '../core/coordinator-error.js';
import type { GroupEvent } from '../core/group-event.js';
import { isDrainedFor, type ShardInspection } from '../core/streams/drain-rule.js';
import {
  abandonGroup,
  applyObservation,
  beginReshard,
  finishReshard,
  fullyMirrored,
  markClosed,
  pendingGroupEvents,
  publishLayout,
  type GroupObservation,
  type ReshardObservation,
  type ReshardRequest,
  withMirrored,
  withNextVersion,
} from '../core/streams/reshard-steps.js';
import {
  type ReshardEvent,
  type StreamRecord,
  waitedGroups,
} from '../core/streams/stream-record.js';
import { KeyedQueue } from '../groups/keyed-queue.js';
import type { ReshardGroups } from './reshard-groups.js';
import type { ShardDataPlane } from '../store/shard-data-plane.js';
import type { StreamRegistry } from '../store/stream-registry.js';

/** Settings of the {@link ReshardDriver}. */
export interface ReshardDriverOptions {
  /** How often running reshards are advanced (`RESHARD_POLL_MS`). */
  readonly pollMs: number;
  /**
   * How long a waited-for group may have no subscribed member before `RESHARD_GROUP_IDLE` is
   * logged (`RESHARD_IDLE_GROUP_GRACE_MS`). The group is still waited for: its old shards are kept.
   */
  readonly idleNoticeMs: number;
  /** Largest shard count (`MAX_SHARDS`). */
  readonly maxShards: number;
  /** Fault points for tests (none in production). */
  readonly hooks?: ReshardDriverHooks;
}

/**
 * Fault points of the {@link ReshardDriver}, for tests that drive an interleaving
 * deterministically: each is awaited at its point of the step, so a test can hold the driver
 * there while other actors move.
 */
export interface ReshardDriverHooks {
  /** `preparing`: the tracked groups were discovered; the new shards are not opened yet. */
  afterDiscover?(stream: string, groups: readonly string[]): Promise<void>;
}

/** Where the driver logs. */
export interface ReshardLogger {
  log(message: string): void;
  warn(message: string): void;
}

/** Outcome of {@link ReshardDriver.request}. */
export interface ReshardRequestResult {
  /** `accepted`: a reshard was started; `unchanged`: the stream already has that many shards. */
  readonly outcome: 'accepted' | 'unchanged';
  readonly record: StreamRecord;
}

/** Steps one call of {@link ReshardDriver.advance} takes at most (preparing → closing → draining → …). */
const MAX_STEPS_PER_ADVANCE = 4;
/** Compare-and-set attempts of a reshard request before answering 503. */
const MAX_REQUEST_ATTEMPTS = 5;

/**
 * Drives reshards to completion: the I/O around the pure state machine of
 * `core/streams/reshard-steps.ts`. Every step is persisted with compare-and-set on the stream
 * record before the next one starts, and every data-plane action is idempotent, so any replica
 * may run it, several may run it at once (the losers of a race re-read and recompute), and a
 * coordinator killed at any point resumes where the persisted record says:
 *
 * 1. `preparing`: find the tracked groups (every group with a member subscribed to the stream,
 *    plus every existing group that has a consumer group on an old shard), open the new shards
 *    (`state=open`, only if never opened: a closed shard is never reopened) and create the
 *    tracked groups' consumer groups on them at id 0, then publish the new layout (`closing`).
 * 2. `closing`: close every old shard (`state=closed`; producers with old routing now get
 *    STALE_ROUTING and refresh) → `draining`.
 * 3. `draining`, every poll: read the consumer groups of every old shard and track the existing
 *    groups found there that are not tracked yet (a group whose first member joined during
 *    `preparing`); mark (old shard, group) drained when the group's consumer group has nothing
 *    pending and nothing undelivered; mark it released once no member of the group holds it any
 *    more; delete an old shard's keys once every waited-for group released it, and drop it from
 *    the record; give up on deleted groups at once. Idle groups are waited for until they come
 *    back or an admin abandons them ({@link ReshardDriver.abandon}).
 * 4. `completing`: once the last events reached every tracked group's event log, `resharding =
 *    null`.
 *
 * Each step's events go to the stream's event log (atomically with the record) and to every
 * tracked group's event log (at least once: a cursor per group lives in the record).
 */
export class ReshardDriver {
  private readonly queue = new KeyedQueue();
  /** Event-log cursors already delivered by this replica, ahead of the persisted ones. */
  private readonly delivered = new Map<
    string,
    { startedAt: number; cursors: Map<string, number> }
  >();
  private timer: NodeJS.Timeout | undefined;
  private loop: Promise<void> = Promise.resolve();
  private stopped = true;
  private failures = 0;

  constructor(
    private readonly registry: StreamRegistry,
    private readonly data: ShardDataPlane,
    private readonly groups: ReshardGroups,
    private readonly clock: { now(): number },
    private readonly options: ReshardDriverOptions,
    private readonly logger: ReshardLogger,
  ) {}

  /** Starts polling running reshards every `pollMs`. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule();
  }

  /** Stops polling; resolves when the current round has finished. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.loop;
  }

  /**
   * `POST /v1/streams/{stream}/reshard`: starts a reshard (persisted as `preparing`) and takes its
   * first steps at once, so the answer already carries the new routing in the normal case.
   *
   * @throws CoordinatorError STREAM_NOT_FOUND, RESHARD_IN_PROGRESS, INVALID_REQUEST, or
   *   COORDINATOR_NOT_AVAILABLE when concurrent writers kept winning.
   */
  async request(stream: string, request: ReshardRequest): Promise<ReshardRequestResult> {
    const started = await this.queue.run(stream, async () => {
      for (let attempt = 0; attempt < MAX_REQUEST_ATTEMPTS; attempt++) {
        const record = await this.freshRecord(stream);
        const begun = beginReshard(record, request, this.options.maxShards, this.clock.now());
        if (begun.kind === 'unchanged') return { outcome: 'unchanged' as const, record };
        if (
          await this.registry.write(
            withNextVersion(record, begun.record),
            record.version,
            begun.events,
          )
        ) {
          this.logger.log(
            `reshard of ${stream} requested: ${record.shards.length} → ${request.shards} shard(s), ${request.mode} mode`,
          );
          return { outcome: 'accepted' as const, record };
        }
      }
      throw new CoordinatorError(
        'COORDINATOR_NOT_AVAILABLE',
        `stream "${stream}" is being changed concurrently by other coordinator replicas; retry`,
      );
    });
    if (started.outcome === 'unchanged') return started;
    try {
      await this.advance(stream);
    } catch (error) {
      // Persisted: the driver loop (of any replica) takes it from here.
      this.logger.warn(
        `reshard of ${stream}: first steps failed, the driver will retry: ${String(error)}`,
      );
    }
    return { outcome: 'accepted', record: this.registry.get(stream) ?? started.record };
  }

  /** The stream's record as Redis has it now; STREAM_NOT_FOUND when there is none. */
  private async freshRecord(stream: string): Promise<StreamRecord> {
    await this.registry.refresh();
    const record = this.registry.get(stream);
    if (!record) {
      throw new CoordinatorError(
        'STREAM_NOT_FOUND',
        `stream "${stream}" does not exist; create it with PUT /v1/streams/${stream}`,
      );
    }
    return record;
  }

  /**
   * `POST /v1/streams/{stream}/groups/{group}/abandon`: the running reshard stops waiting for
   * `group` (see {@link abandonGroup}); the old shards nobody else needs are deleted by the next
   * drain step (the next poll). Resolves with the record as persisted (unchanged when the group
   * was already abandoned).
   *
   * @throws CoordinatorError STREAM_NOT_FOUND, NOT_FOUND (no reshard, or the group is not
   *   tracked), RESHARD_IN_PROGRESS (still preparing), GROUP_NOT_EMPTY (the group has a member
   *   subscribed to the stream), or COORDINATOR_NOT_AVAILABLE when
   *   concurrent writers kept winning.
   */
  abandon(stream: string, group: string): Promise<StreamRecord> {
    return this.queue.run(stream, async () => {
      for (let attempt = 0; attempt < MAX_REQUEST_ATTEMPTS; attempt++) {
        const record = await this.freshRecord(stream);
        const seen = record.resharding?.groups.includes(group)
          ? await this.groups.observe(group, stream)
          : undefined;
        const result = abandonGroup(record, group, this.clock.now(), {
          active: seen?.status === 'active',
        });
        if (result.kind === 'unchanged') return record;
        const next = withNextVersion(record, result.record);
        if (await this.registry.write(next, record.version, result.events)) {
          this.logger.warn(
            `reshard of ${stream}: group ${group} abandoned by an admin; its unread messages in old shard(s) ${String(result.events[0]?.data.shards)} will be deleted`,
          );
          return next;
        }
      }
      throw new CoordinatorError(
        'COORDINATOR_NOT_AVAILABLE',
        `stream "${stream}" is being changed concurrently by other coordinator replicas; retry`,
      );
    });
  }

  /** Takes every step of `stream`'s reshard that can be taken now. Resolves `true` if any was. */
  advance(stream: string): Promise<boolean> {
    return this.queue.run(stream, async () => {
      let progressed = false;
      for (let i = 0; i < MAX_STEPS_PER_ADVANCE; i++) {
        const before = this.registry.get(stream)?.resharding?.state;
        if (!(await this.step(stream))) break;
        progressed = true;
        // Draining steps wait for the next poll; state changes continue at once.
        if (this.registry.get(stream)?.resharding?.state === before) break;
      }
      return progressed;
    });
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.loop = this.round().finally(() => this.schedule());
    }, this.options.pollMs);
  }

  private async round(): Promise<void> {
    let failed: unknown;
    try {
      await this.registry.refresh();
      for (const record of this.registry.list()) {
        if (this.stopped) return;
        // One stream failing (say, its shard's Redis node is away) must not hold up the others.
        if (record.resharding)
          await this.advance(record.stream).catch((error: unknown) => (failed = error));
      }
    } catch (error) {
      failed = error;
    }
    if (failed === undefined) {
      this.failures = 0;
      return;
    }
    this.failures++;
    if (this.failures === 1 || this.failures % 50 === 0) {
      this.logger.warn(
        `reshard driver round failed (${this.failures} in a row), retrying: ${failed instanceof Error ? failed.message : JSON.stringify(failed)}`,
      );
    }
  }

  /** One step on the cached record; `false` when there was nothing to do or the write lost a race. */
  private async step(stream: string): Promise<boolean> {
    const base = this.registry.get(stream);
    if (!base?.resharding) return false;
    const now = this.clock.now();
    let next = withMirrored(base, await this.mirror(base, 3 * this.options.pollMs));
    let events: readonly ReshardEvent[] = [];
    let remove: readonly number[] = [];
    const r = next.resharding;
    if (!r) return false;
    switch (r.state) {
      case 'preparing': {
        const { groups, idle } = await this.discoverGroups(next);
        await this.options.hooks?.afterDiscover?.(stream, groups);
        // Opening is the one step that cannot be undone by losing the write race: re-read first,
        // so a replica that paused here does not open shards of a change others have moved on.
        await this.registry.refresh();
        if (this.registry.get(stream)?.version !== base.version) return false;
        const refused = await this.data.open(stream, r.toShards);
        if (refused.length > 0) {
          // Only a stale view gets here: the layout was published and later closed meanwhile.
          this.logger.warn(
            `reshard of ${stream}: new shard(s) ${refused.join(',')} already closed by a later step; this replica's view is stale, re-reading`,
          );
          await this.registry.refresh();
          return false;
        }
        await this.data.createGroups(stream, r.toShards, groups);
        ({ record: next, events } = publishLayout(next, groups, now, idle));
        break;
      }
      case 'closing':
        await this.data.close(stream, r.fromShards);
        ({ record: next, events } = markClosed(next, now));
        break;
      case 'draining': {
        const obs = await this.observe(next, now);
        const late = [...(obs.found?.keys() ?? [])];
        if (late.length > 0) await this.data.createGroups(stream, r.toShards, late);
        ({ record: next, events, remove } = applyObservation(next, obs));
        break;
      }
      case 'completing':
        if (fullyMirrored(r)) {
          // New shards stop forcing new consumer groups to 0 (docs/protocol.md §12.3).
          await this.data.clearOrigin(stream, r.toShards);
          next = finishReshard(next);
        }
        break;
    }
    if (next === base) return false;
    for (const shard of remove) await this.data.remove(stream, shard);
    const written = await this.registry.write(withNextVersion(base, next), base.version, events);
    if (!written) return false;
    for (const e of events) this.logGroupEvent(stream, e);
    if (next.resharding === null) {
      this.delivered.delete(stream);
      this.logger.log(
        `reshard of ${stream} completed: ${base.resharding.fromShards.length} → ${base.resharding.toShards.length} shard(s)`,
      );
    } else if (events.length > 0) {
      // Tell the groups now (their epoch bump then comes with the event); the cursor is
      // persisted with the next write.
      const fresh = this.registry.get(stream);
      if (fresh?.version === base.version + 1) await this.mirror(fresh, 0);
    }
    return true;
  }

  private logGroupEvent(stream: string, e: ReshardEvent): void {
    const group = String(e.data.group);
    const shards = Array.isArray(e.data.shards) ? e.data.shards.join(',') : '';
    if (e.type === 'RESHARD_GROUP_IDLE') {
      this.logger.warn(
        `reshard of ${stream}: group ${group} has had no member for ${String(e.data.idleMs)} ms; its old shard(s) ${shards} are kept until it comes back and drains them, or an admin abandons it (POST /v1/streams/${stream}/groups/${group}/abandon)`,
      );
    } else if (e.type === 'RESHARD_GROUP_TRACKED') {
      this.logger.warn(
        `reshard of ${stream}: group ${group} has a consumer group on old shard(s) ${shards} and was not tracked (it joined while the change was preparing); tracked now, in strict order`,
      );
    }
  }

  /**
   * Appends the steps each tracked group has not had to its event log. Returns the cursors that
   * moved past the persisted ones (delivered now or earlier by this replica). Steps younger than
   * `minAgeMs` are left alone (and so is everything after them): right after its own write a
   * replica mirrors at once (`0`); steps another replica wrote are mirrored only once that writer
   * had time to persist its cursor, so replicas do not duplicate each other's events.
   */
  private async mirror(record: StreamRecord, minAgeMs: number): Promise<Map<string, number>> {
    const r = record.resharding;
    const out = new Map<string, number>();
    if (!r || r.state === 'preparing') return out;
    let memo = this.delivered.get(record.stream);
    if (memo?.startedAt !== r.startedAt) {
      memo = { startedAt: r.startedAt, cursors: new Map() };
      this.delivered.set(record.stream, memo);
    }
    const cursors = memo.cursors;
    const now = this.clock.now();
    const young = r.log.find((e) => now - e.at < minAgeMs);
    const horizon = young ? young.step - 1 : r.step;
    await Promise.all(
      r.groups.map(async (group) => {
        const persisted = r.mirrored[group] ?? 0;
        const known = Math.max(persisted, cursors.get(group) ?? 0);
        if (known < horizon) {
          const pending = pendingGroupEvents(record, group).filter(
            (e) => e.step > known && e.step <= horizon,
          );
          try {
            if (pending.length > 0)
              await this.groups.recordEvents(group, pending.map(toGroupEvent));
            cursors.set(group, horizon);
          } catch (error) {
            this.logger.warn(
              `reshard of ${record.stream}: could not log to group ${group}, will retry: ${String(error)}`,
            );
            return;
          }
        }
        const moved = Math.max(persisted, cursors.get(group) ?? 0);
        if (moved > persisted) out.set(group, moved);
      }),
    );
    return out;
  }

  /**
   * Tracked groups: subscribers of the stream, and existing groups with a consumer group on an old
   * shard; `idle`: those of them without a subscribed member now.
   */
  private async discoverGroups(
    record: StreamRecord,
  ): Promise<{ groups: string[]; idle: string[] }> {
    const r = record.resharding;
    if (!r) return { groups: [], idle: [] };
    const ids = await this.groups.listGroupIds();
    const tracked = new Set<string>();
    const seen = new Map(
      await Promise.all(
        ids.map(async (id) => [id, await this.groups.observe(id, record.stream)] as const),
      ),
    );
    for (const [id, o] of seen) if (o.status === 'active') tracked.add(id);
    for (const shard of r.fromShards) {
      for (const name of await this.data.groupNames(record.stream, shard)) {
        const o = seen.get(name);
        if (o && o.status !== 'deleted') tracked.add(name);
      }
    }
    const groups = [...tracked].sort();
    return { groups, idle: groups.filter((g) => seen.get(g)?.status === 'idle') };
  }

  /**
   * What the data plane and the groups look like now, for {@link applyObservation}. Every old
   * shard's consumer groups are read in this round, before any shard it leads to delete: an
   * existing group found there that is not tracked (its first member joined while the change was
   * `preparing`) is reported in `found`, so it is tracked before anything it reads is deleted.
   */
  private async observe(record: StreamRecord, now: number): Promise<ReshardObservation> {
    const r = record.resharding;
    const waiting = r ? waitedGroups(r) : [];
    const inspections = new Map<number, ShardInspection>();
    const candidates = new Map<string, number[]>();
    for (const s of record.shards) {
      if (s.state !== 'draining' || !r) continue;
      const inspection = await this.data.inspect(record.stream, s.id);
      inspections.set(s.id, inspection);
      for (const name of inspection.groups.keys()) {
        if (r.groups.includes(name) && r.abandoned[name]?.reason !== 'deleted') continue;
        candidates.set(name, [...(candidates.get(name) ?? []), s.id]);
      }
    }
    const groups = new Map<string, GroupObservation>();
    await Promise.all(
      [...waiting, ...candidates.keys()].map(async (g) => {
        groups.set(g, await this.groups.observe(g, record.stream));
      }),
    );
    const found = new Map<string, readonly number[]>();
    for (const [name, shards] of candidates)
      if (groups.get(name)?.status !== 'deleted') found.set(name, shards);
    const drained = new Map<number, Set<string>>();
    for (const [id, inspection] of inspections) {
      const done = r?.drained[String(id)] ?? [];
      const need = [...waiting, ...found.keys()].filter((g) => !done.includes(g));
      drained.set(id, new Set(need.filter((g) => isDrainedFor(inspection, g))));
    }
    return { now, drained, groups, found, idleNoticeMs: this.options.idleNoticeMs };
  }
}

function toGroupEvent(e: ReshardEvent): GroupEvent {
  return { type: e.type, data: { ...e.data, step: e.step } };
}
