import { NAME_PATTERN } from './limits.js';

/**
 * Names of every Redis key the system writes, all under one `KEY_PREFIX`. The one place keys are
 * built (docs/protocol.md §13). Every key is `<prefix>:{<tag>}[:<part>]`, and the tag
 * alone tells the family, so no two names of different kinds can build one key:
 *
 * - a tag that starts with `@` is the control plane (no group or stream name contains `@`, `:`
 *   or a brace — `NAME_PATTERN`): `@g:<group>` for a group's keys, `@m` for the stream catalog;
 * - any other tag is the data plane: `<stream>:<shard>` (one `:`) for a shard, `<stream>` (no
 *   `:`) for a stream's dead-letter stream.
 *
 * Data-plane keys (one hash tag per shard, so shards spread across Redis Cluster slots; a shard's
 * stream, its meta hash and its read gates share the tag, so same-slot Lua can check them all):
 * - `<prefix>:{<stream>:<shard>}` — the shard's Redis Stream.
 * - `<prefix>:{<stream>:<shard>}:meta` — hash: `state` (`open`/`closed`), `owner:<group>`
 *   (the fence token of the member allowed to read and ack for that group) and `gate:<group>`
 *   (the key of that member's read gate).
 * - `<prefix>:{<stream>:<shard>}:gate:<group>:<memberId>` — the read gate: an empty stream with a
 *   consumer group `<group>`, present only while `<memberId>` owns the shard for `<group>`.
 * - `<prefix>:{<stream>}:dlq` — the stream's dead-letter stream.
 * - `<prefix>:{<stream>}:dlq:replays` — hash: dead-letter entry id → replay mark (JSON).
 *
 * Control-plane keys (one tag per group; the stream catalog under its own tag):
 * - `<prefix>:{@g:<group>}:meta|members|targets|seen|events|projection`
 * - `<prefix>:{@m}:groups`, `<prefix>:{@m}:streams`, `<prefix>:{@m}:catalog-version`,
 *   `<prefix>:{@m}:stream-events:<stream>`, `<prefix>:{@m}:health`,
 *   `<prefix>:{@m}:incarnation`
 * - pub/sub channels (a namespace of their own) `<prefix>:nudge:<group>` and
 *   `<prefix>:streams-changed`.
 *
 * Names must be valid (`NAME_PATTERN`, `ID_PATTERN` for member ids); every entry point checks
 * them before a key is built.
 *
 * @publicApi
 */
export class KeySpace {
  constructor(readonly prefix: string) {
    if (!/^[A-Za-z0-9._-]{1,64}$/.test(prefix)) {
      throw new RangeError(
        `KEY_PREFIX must be 1-64 characters of [A-Za-z0-9._-], got ${JSON.stringify(prefix)}`,
      );
    }
  }

  /** The Redis Stream key of one shard. */
  shardKey(stream: string, shard: number): string {
    return `${this.prefix}:{${stream}:${shard}}`;
  }

  /** The dead-letter stream of a logical stream. */
  deadLetterKey(stream: string): string {
    return `${this.prefix}:{${stream}}:dlq`;
  }

  /** Hash: dead-letter entry id → replay mark (JSON), beside the dead-letter stream (same slot). */
  deadLetterReplaysKey(stream: string): string {
    return `${this.prefix}:{${stream}}:dlq:replays`;
  }

  /** Control-plane hash of one group's epochs and version. */
  groupMetaKey(group: string): string {
    return this.groupPart(group, 'meta');
  }

  /**
   * `SCAN MATCH` pattern of every group's meta hash under this prefix (glob characters of the
   * prefix escaped), for repairing the index of groups.
   */
  groupMetaKeyPattern(): string {
    return `${this.prefix.replace(/[*?[\]\\]/g, '\\$&')}:{@g:*}:meta`;
  }

  /** The group whose meta hash `key` is ({@link groupMetaKey}), or null for any other key. */
  groupFromMeta(key: string): string | null {
    const head = `${this.prefix}:{@g:`;
    const tail = '}:meta';
    if (!key.startsWith(head) || !key.endsWith(tail)) return null;
    const group = key.slice(head.length, key.length - tail.length);
    return NAME_PATTERN.test(group) ? group : null;
  }

  /** Control-plane hash: member id → member record (JSON). */
  groupMembersKey(group: string): string {
    return this.groupPart(group, 'members');
  }

  /** Control-plane hash: member id → target assignment (JSON). */
  groupTargetsKey(group: string): string {
    return this.groupPart(group, 'targets');
  }

  /** Control-plane hash: member id → last heartbeat time (Redis clock, ms). */
  groupSeenKey(group: string): string {
    return this.groupPart(group, 'seen');
  }

  /** The group's append-only event log (a Redis Stream). */
  groupEventsKey(group: string): string {
    return this.groupPart(group, 'events');
  }

  /** Hash: the group's last projection of its event log (dashboard and metrics). */
  groupProjectionKey(group: string): string {
    return this.groupPart(group, 'projection');
  }

  /** Set of every known group id. */
  groupsIndexKey(): string {
    return this.catalogPart('groups');
  }

  /** Hash: stream name → stream metadata (JSON). */
  streamsKey(): string {
    return this.catalogPart('streams');
  }

  /** Counter bumped on every change of any stream's metadata (the catalog version). */
  catalogVersionKey(): string {
    return this.catalogPart('catalog-version');
  }

  /** Event log of one stream's metadata changes (creation, reshard steps). */
  streamEventsKey(stream: string): string {
    return this.catalogPart(`stream-events:${stream}`);
  }

  /**
   * The incarnation marker: a random id the coordinator writes once per Redis dataset; gone or
   * changed means Redis lost its data (docs/protocol.md §13.3).
   */
  incarnationKey(): string {
    return this.catalogPart('incarnation');
  }

  /**
   * Hash: per stream creation or restore still in flight or not settled (its opener id), the
   * shards it opens before its record is written (JSON); what a replica that stopped left open is
   * taken back from it (docs/protocol.md §13.6).
   */
  unwrittenShardsKey(): string {
    return this.catalogPart('unwritten-shards');
  }

  /** Short-lived key the readiness probe writes to prove Redis accepts writes. */
  readinessProbeKey(): string {
    return this.catalogPart('health');
  }

  /** Pub/sub channel on which members of `group` are told to heartbeat at once. */
  nudgeChannel(group: string): string {
    return `${this.prefix}:nudge:${group}`;
  }

  /** Pub/sub channel on which replicas learn that stream metadata changed. */
  streamsChangedChannel(): string {
    return `${this.prefix}:streams-changed`;
  }

  private groupPart(group: string, part: string): string {
    return `${this.prefix}:{@g:${group}}:${part}`;
  }

  private catalogPart(part: string): string {
    return `${this.prefix}:{@m}:${part}`;
  }
}

/**
 * The `KEY_PREFIX` a key handed out by the coordinator was built with (`rsc:{orders:3}` → `rsc`),
 * or `null` when the key does not have the expected shape. Lets members derive every other name
 * (dead-letter stream, nudge channel) from keys the coordinator gave them.
 *
 * @publicApi
 */
export function prefixOfKey(key: string): string | null {
  const at = key.indexOf(':{');
  if (at <= 0) return null;
  const prefix = key.slice(0, at);
  return /^[A-Za-z0-9._-]{1,64}$/.test(prefix) ? prefix : null;
}

/**
 * The meta hash of a shard, derived from the shard key the coordinator hands out.
 *
 * @publicApi
 */
export function shardMetaKey(shardKey: string): string {
  return `${shardKey}:meta`;
}

/**
 * Field of a shard's meta hash holding the fence token of `group`'s owner.
 *
 * @publicApi
 */
export function ownerField(group: string): string {
  return `owner:${group}`;
}

/**
 * The read gate of `memberId` on a shard for `group`: an empty stream carrying a consumer group
 * named `group`, which the coordinator creates with the grant and deletes when the shard moves or
 * is released (in the same script as the fence token). The member reads with one plain
 * `XREADGROUP GROUP <group> <memberId> … STREAMS <gate> <shardKey> > >`: Redis checks the
 * consumer group of every key before serving any, so without its gate a member reads nothing.
 * Same hash tag as the shard (the shard key's tag comes first), so same slot. Group names have no
 * `:` (`NAME_PATTERN`), so the key is unambiguous; it is `shardGateKey(shardKey, group, '')`
 * followed by the member id.
 *
 * @publicApi
 */
export function shardGateKey(shardKey: string, group: string, memberId: string): string {
  return `${shardKey}:gate:${group}:${memberId}`;
}

/**
 * Field of a shard's meta hash recording the key of `group`'s current read gate (so a release,
 * a move or the deletion of the shard finds every gate to delete).
 *
 * @publicApi
 */
export function gateField(group: string): string {
  return `gate:${group}`;
}

/**
 * A fence token: `<version>:<memberId>`. The version is the coordinator's group version at the
 * grant, so token writes can be ordered; members are matched on the member id part.
 *
 * @publicApi
 */
export function fenceToken(version: number, memberId: string): string {
  return `${version}:${memberId}`;
}

/**
 * Splits a fence token into its version and member id, or `null` when it is malformed.
 *
 * @publicApi
 */
export function parseFenceToken(token: string): { version: number; memberId: string } | null {
  const colon = token.indexOf(':');
  if (colon <= 0) return null;
  const version = Number(token.slice(0, colon));
  if (!Number.isSafeInteger(version)) return null;
  return { version, memberId: token.slice(colon + 1) };
}
