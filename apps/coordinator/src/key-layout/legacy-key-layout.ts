/**
 * The old key layout (before control-plane tags started with `@`), read only by the migration and
 * the start-up check: a group's keys under the hash tag `{g:<group>}`, the stream catalog under
 * `{m}`. A shard of a stream named `g` had the tag `{g:<shard>}` too, so `<prefix>:{g:<n>}:meta`
 * was at once the meta hash of group `<n>` and the meta hash of shard `<n>` of stream `g`
 * (docs/operations.md, "Moving to the current key layout"). Data-plane keys (shards, meta hashes,
 * gates, dead-letter streams) did not change.
 */
export class LegacyKeyLayout {
  constructor(readonly prefix: string) {}

  /** A group's key: `part` is `meta`, `members`, `targets`, `seen`, `events` or `projection`. */
  groupKey(group: string, part: GroupPart): string {
    return `${this.prefix}:{g:${group}}:${part}`;
  }

  /** A catalog key: `streams`, `catalog-version`, `groups`, `health`, `stream-events:<stream>`. */
  catalogKey(part: string): string {
    return `${this.prefix}:{m}:${part}`;
  }

  /** Keys whose presence means the control plane is still in this layout. */
  markerKeys(): string[] {
    return LEGACY_MARKERS.map((part) => this.catalogKey(part));
  }

  /** `{group, part}` of a key of this layout's group family, or `null`. */
  parseGroupKey(key: string): { group: string; part: GroupPart } | null {
    const stem = `${this.prefix}:{g:`;
    if (!key.startsWith(stem)) return null;
    const close = key.indexOf('}:', stem.length);
    if (close < 0) return null;
    const group = key.slice(stem.length, close);
    const part = key.slice(close + 2);
    if (!/^[A-Za-z0-9._-]{1,128}$/.test(group)) return null;
    return isGroupPart(part) ? { group, part } : null;
  }

  /** The stream of a key `<prefix>:{m}:stream-events:<stream>`, or `null`. */
  parseStreamEventsKey(key: string): string | null {
    const stem = this.catalogKey('stream-events:');
    const stream = key.startsWith(stem) ? key.slice(stem.length) : '';
    return /^[A-Za-z0-9._-]{1,128}$/.test(stream) ? stream : null;
  }
}

/** The parts of a group's keys. */
export const GROUP_PARTS = ['meta', 'members', 'targets', 'seen', 'events', 'projection'] as const;
export type GroupPart = (typeof GROUP_PARTS)[number];

function isGroupPart(part: string): part is GroupPart {
  return (GROUP_PARTS as readonly string[]).includes(part);
}

/** Catalog keys of the old layout, in the order the migration moves them (`streams` last). */
export const LEGACY_MARKERS = ['catalog-version', 'groups', 'streams'] as const;

/** The shard meta fields that are plain words (docs/protocol.md §13.2). */
const SHARD_META_WORDS = new Set(['state', 'origin', 'opener']);

/**
 * True for a field of a shard's meta hash: `state`, `origin`, `opener` and the per-group fields,
 * which all name their group after a `:` (`owner:<group>`, `gate:<group>`,
 * `fence-order:<group>`). A group's meta fields are other plain words (`version`, `groupEpoch`,
 * `pendingFences`, …), so every other field of a `{g:<n>}:meta` hash belongs to group `<n>`.
 */
export function isShardMetaField(field: string): boolean {
  return SHARD_META_WORDS.has(field) || field.includes(':');
}
