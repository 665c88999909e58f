import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { KeySpace, shardMetaKey } from '@redis-stream-coordinator/nestjs/protocol';
import type { Redis } from 'ioredis';
import { activeShardIds, type StreamRecord } from '../core/streams/stream-record.js';
import { redisTimeMs } from '../redis/redis-time.js';
import { KeyLayoutConflictError } from './key-layout-conflict.error.js';
import {
  GROUP_PARTS,
  isShardMetaField,
  LEGACY_MARKERS,
  LegacyKeyLayout,
} from './legacy-key-layout.js';

/** One key to move; `meta`: a group's meta hash, which may also hold a shard's fields. */
interface Move {
  readonly from: string;
  readonly to: string;
  readonly meta: boolean;
}

/** The fields of an old `{g:<n>}:meta` hash that belong to group `<n>` (not to a shard). */
function groupFieldsOf(hash: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(hash).filter(([field]) => !isShardMetaField(field)));
}

function sameHash(a: Record<string, string>, b: Record<string, string>): boolean {
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((k) => b[k] === a[k]);
}

/** How long the old layout must have been quiet (no probe, no heartbeat answered) to migrate. */
export const OLD_COORDINATOR_QUIET_MS = 10_000;

/** What {@link KeyLayoutMigration.run} did. */
export interface KeyLayoutMigrationReport {
  /** Keys moved whole to their new name. */
  readonly moved: number;
  /** `{g:<n>}:meta` hashes shared by group `<n>` and shard `<n>` of stream `g`, split in two. */
  readonly split: readonly string[];
  /** Shard meta hashes of stream `g` whose `state` the old layout had wiped, set again. */
  readonly repaired: readonly string[];
}

/**
 * Moves the control plane from the old key layout (`{g:<group>}`, `{m}`) to the current one
 * (`{@g:<group>}`, `{@m}`); data-plane keys keep their names. Run with every coordinator stopped.
 * Each key is copied with DUMP/RESTORE (so it works across Redis Cluster slots and keeps streams'
 * ids and TTLs) and then deleted; a run that stops half way can simply be run again. A key of the
 * current layout that holds something else is never overwritten (see {@link run}). The catalog
 * keys that mark the old layout move last, so coordinators refuse to start until all is moved.
 */
export class KeyLayoutMigration {
  private readonly legacy: LegacyKeyLayout;

  constructor(
    private readonly redis: RedisConnection,
    private readonly keys: KeySpace,
    private readonly print: (line: string) => void = () => undefined,
  ) {
    this.legacy = new LegacyKeyLayout(keys.prefix);
  }

  /** The old layout's marker keys present in Redis (empty: nothing to migrate). */
  async legacyMarkers(): Promise<string[]> {
    const found: string[] = [];
    for (const key of this.legacy.markerKeys()) {
      if ((await this.redis.exists(key)) > 0) found.push(key);
    }
    return found;
  }

  /**
   * Why a coordinator of the old layout looks alive, or `null`: it answered a readiness probe
   * (its key lives 10 s) or a member's heartbeat (the Redis time a group's `seen` records) in the
   * last {@link OLD_COORDINATOR_QUIET_MS}. The heartbeats catch replicas nothing probes.
   */
  async oldCoordinatorActivity(): Promise<string | null> {
    if ((await this.redis.exists(this.legacy.catalogKey('health'))) > 0) {
      return 'a coordinator of the old key layout answered a readiness probe in the last 10 s';
    }
    const now = redisTimeMs(await this.redis.time());
    for (const group of await this.legacyGroups()) {
      const [, last] = await this.redis.zrevrange(
        this.legacy.groupKey(group, 'seen'),
        0,
        0,
        'WITHSCORES',
      );
      const age = last === undefined ? Infinity : now - Number(last);
      if (age < OLD_COORDINATOR_QUIET_MS) {
        return `a coordinator of the old key layout answered a heartbeat of group ${group} ${Math.max(age, 0)} ms ago`;
      }
    }
    return null;
  }

  /**
   * Moves every key, or throws {@link KeyLayoutConflictError} before moving any when a key of the
   * current layout already holds something else than its old twin (an old coordinator wrote the
   * old layout again after a move): current state is never overwritten.
   */
  async run(): Promise<KeyLayoutMigrationReport> {
    const plan = await this.plan();
    const conflicts: string[] = [];
    for (const { from, to, meta } of plan) {
      if (!(await this.sameOrAbsent(from, to, meta))) conflicts.push(`${from} → ${to}`);
    }
    if (conflicts.length > 0) throw new KeyLayoutConflictError(conflicts);
    let moved = 0;
    const split: string[] = [];
    for (const { from, to, meta } of plan) {
      if (meta) {
        const outcome = await this.moveGroupMeta(from, to);
        if (outcome === 'split') split.push(from);
        if (outcome !== 'none') moved++;
      } else if (await this.move(from, to)) {
        moved++;
      }
    }
    await this.redis.del(this.legacy.catalogKey('health'));
    const repaired = await this.repairCollidedShards();
    this.print(
      `moved ${moved} key(s); split ${split.length} shared meta hash(es)${split.length ? `: ${split.join(', ')}` : ''}; ` +
        `repaired ${repaired.length} shard meta hash(es)${repaired.length ? `: ${repaired.join(', ')}` : ''}`,
    );
    return { moved, split, repaired };
  }

  /** Every move, in order: the groups' keys, the stream event logs, the catalog markers last. */
  private async plan(): Promise<Move[]> {
    const moves: Move[] = [];
    for (const group of await this.legacyGroups()) {
      for (const part of GROUP_PARTS) {
        const from = this.legacy.groupKey(group, part);
        moves.push({ from, to: this.newGroupKey(group, part), meta: part === 'meta' });
      }
    }
    for (const key of await this.scan(this.legacy.catalogKey('stream-events:*'))) {
      const stream = this.legacy.parseStreamEventsKey(key);
      if (stream !== null)
        moves.push({ from: key, to: this.keys.streamEventsKey(stream), meta: false });
    }
    const targets: Record<(typeof LEGACY_MARKERS)[number], string> = {
      'catalog-version': this.keys.catalogVersionKey(),
      groups: this.keys.groupsIndexKey(),
      streams: this.keys.streamsKey(),
    };
    for (const part of LEGACY_MARKERS) {
      moves.push({ from: this.legacy.catalogKey(part), to: targets[part], meta: false });
    }
    return moves;
  }

  /**
   * True when moving `from` cannot overwrite anything: `to` is absent, or it already holds what
   * would be moved (a run that stopped between copy and delete). For a group's meta hash, what
   * moves is its group fields only.
   */
  private async sameOrAbsent(from: string, to: string, meta: boolean): Promise<boolean> {
    if ((await this.redis.exists(to)) === 0) return true;
    if (meta) {
      const fields = groupFieldsOf(await this.redis.hgetall(from));
      if (Object.keys(fields).length === 0) return true;
      return sameHash(fields, await this.redis.hgetall(to));
    }
    const dump = await this.redis.dumpBuffer(from);
    if (dump === null) return true;
    const current = await this.redis.dumpBuffer(to);
    return current !== null && dump.equals(current);
  }

  /** Every group of the old layout: its index and every key of its family (the index can lag). */
  private async legacyGroups(): Promise<string[]> {
    const groups = new Set(await this.redis.smembers(this.legacy.catalogKey('groups')));
    for (const key of await this.scan(`${this.keys.prefix}:{g:*`)) {
      const parsed = this.legacy.parseGroupKey(key);
      // A `{g:<n>}:meta` hash alone may be a shard's meta of stream `g`: moveGroupMeta decides.
      if (parsed) groups.add(parsed.group);
    }
    return [...groups].sort();
  }

  private newGroupKey(group: string, part: (typeof GROUP_PARTS)[number]): string {
    switch (part) {
      case 'meta':
        return this.keys.groupMetaKey(group);
      case 'members':
        return this.keys.groupMembersKey(group);
      case 'targets':
        return this.keys.groupTargetsKey(group);
      case 'seen':
        return this.keys.groupSeenKey(group);
      case 'events':
        return this.keys.groupEventsKey(group);
      case 'projection':
        return this.keys.groupProjectionKey(group);
    }
  }

  /**
   * Moves a group's meta hash. When it also holds a shard's fields (`state`, `owner:*`, `gate:*`:
   * the collision of the old layout), only the group's fields move and the shard's stay.
   */
  private async moveGroupMeta(from: string, to: string): Promise<'none' | 'moved' | 'split'> {
    const hash = await this.redis.hgetall(from);
    const fields = groupFieldsOf(hash);
    const names = Object.keys(fields);
    if (names.length === 0) return 'none';
    if (names.length === Object.keys(hash).length) {
      return (await this.move(from, to)) ? 'moved' : 'none';
    }
    // `run` checked that `to` is absent or holds exactly these fields already.
    if ((await this.redis.exists(to)) === 0) await this.redis.hset(to, fields);
    await this.redis.hdel(from, ...names);
    return 'split';
  }

  /**
   * Shards of a stream named `g` whose meta hash lost `state` (deleting group `<n>` deleted the
   * shared `{g:<n>}:meta`): every active shard is open for producers, so `state=open` again.
   */
  private async repairCollidedShards(): Promise<string[]> {
    const raw = await this.redis.hget(this.keys.streamsKey(), 'g');
    if (raw === null) return [];
    const record = JSON.parse(raw) as StreamRecord;
    const repaired: string[] = [];
    for (const id of activeShardIds(record)) {
      const meta = shardMetaKey(this.keys.shardKey('g', id));
      if ((await this.redis.hsetnx(meta, 'state', 'open')) === 1) repaired.push(meta);
    }
    return repaired;
  }

  /**
   * Copies `from` to `to` (keeping its TTL) and deletes `from`; false if absent. `run` checked
   * that `to` is absent or already this copy; RESTORE without REPLACE fails rather than overwrite.
   */
  private async move(from: string, to: string): Promise<boolean> {
    const dump = await this.redis.dumpBuffer(from);
    if (dump === null) return false;
    if ((await this.redis.exists(to)) === 0) {
      const ttl = await this.redis.pttl(from);
      await this.redis.restore(to, ttl > 0 ? ttl : 0, dump);
    }
    await this.redis.del(from);
    return true;
  }

  /** Every key matching `pattern`, on every master of a cluster. */
  private async scan(pattern: string): Promise<string[]> {
    const nodes: Redis[] = 'nodes' in this.redis ? this.redis.nodes('master') : [this.redis];
    const out = new Set<string>();
    for (const node of nodes) {
      let cursor = '0';
      do {
        const [next, batch] = await node.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        for (const key of batch) out.add(key);
      } while (cursor !== '0');
    }
    return [...out].sort();
  }
}
