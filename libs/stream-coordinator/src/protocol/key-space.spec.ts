import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { KeySpace, shardGateKey, shardMetaKey } from './key-space.js';
import { ID_PATTERN, NAME_PATTERN } from './limits.js';

/**
 * Every key family the system builds, with the names it is built from. A family's `args` are the
 * names in order; two descriptors are the same key exactly when family, prefix and args are equal.
 */
interface Named {
  readonly family: string;
  readonly prefix: string;
  readonly args: readonly (string | number)[];
}

type Builder = (keys: KeySpace, args: readonly (string | number)[]) => string;
const s = (v: string | number | undefined): string => String(v);
const n = (v: string | number | undefined): number => Number(v);

/** Redis keys (one namespace). */
const KEY_FAMILIES: Readonly<Record<string, { arity: string; build: Builder }>> = {
  shard: { arity: 'SN', build: (k, [a, b]) => k.shardKey(s(a), n(b)) },
  shardMeta: { arity: 'SN', build: (k, [a, b]) => shardMetaKey(k.shardKey(s(a), n(b))) },
  shardGate: {
    arity: 'SNGM',
    build: (k, [a, b, g, m]) => shardGateKey(k.shardKey(s(a), n(b)), s(g), s(m)),
  },
  deadLetter: { arity: 'S', build: (k, [a]) => k.deadLetterKey(s(a)) },
  deadLetterReplays: { arity: 'S', build: (k, [a]) => k.deadLetterReplaysKey(s(a)) },
  groupMeta: { arity: 'G', build: (k, [g]) => k.groupMetaKey(s(g)) },
  groupMembers: { arity: 'G', build: (k, [g]) => k.groupMembersKey(s(g)) },
  groupTargets: { arity: 'G', build: (k, [g]) => k.groupTargetsKey(s(g)) },
  groupSeen: { arity: 'G', build: (k, [g]) => k.groupSeenKey(s(g)) },
  groupEvents: { arity: 'G', build: (k, [g]) => k.groupEventsKey(s(g)) },
  groupProjection: { arity: 'G', build: (k, [g]) => k.groupProjectionKey(s(g)) },
  groupsIndex: { arity: '', build: (k) => k.groupsIndexKey() },
  streams: { arity: '', build: (k) => k.streamsKey() },
  catalogVersion: { arity: '', build: (k) => k.catalogVersionKey() },
  streamEvents: { arity: 'S', build: (k, [a]) => k.streamEventsKey(s(a)) },
  readinessProbe: { arity: '', build: (k) => k.readinessProbeKey() },
  incarnation: { arity: '', build: (k) => k.incarnationKey() },
  unwrittenShards: { arity: '', build: (k) => k.unwrittenShardsKey() },
};

/** Pub/sub channels (their own namespace). */
const CHANNEL_FAMILIES: Readonly<Record<string, { arity: string; build: Builder }>> = {
  nudge: { arity: 'G', build: (k, [g]) => k.nudgeChannel(s(g)) },
  streamsChanged: { arity: '', build: (k) => k.streamsChangedChannel() },
};

/** The KeySpace method each family is built with (so a new method cannot go untested). */
const METHOD_OF: Readonly<Record<string, string>> = {
  shard: 'shardKey',
  deadLetter: 'deadLetterKey',
  deadLetterReplays: 'deadLetterReplaysKey',
  groupMeta: 'groupMetaKey',
  groupMembers: 'groupMembersKey',
  groupTargets: 'groupTargetsKey',
  groupSeen: 'groupSeenKey',
  groupEvents: 'groupEventsKey',
  groupProjection: 'groupProjectionKey',
  groupsIndex: 'groupsIndexKey',
  streams: 'streamsKey',
  catalogVersion: 'catalogVersionKey',
  streamEvents: 'streamEventsKey',
  readinessProbe: 'readinessProbeKey',
  incarnation: 'incarnationKey',
  unwrittenShards: 'unwrittenShardsKey',
  nudge: 'nudgeChannel',
  streamsChanged: 'streamsChangedChannel',
};

const PREFIX = /^[A-Za-z0-9._-]{1,64}$/;
const GROUP_PARTS = ['meta', 'members', 'targets', 'seen', 'events', 'projection'] as const;
const GROUP_FAMILY: Readonly<Record<string, string>> = {
  meta: 'groupMeta',
  members: 'groupMembers',
  targets: 'groupTargets',
  seen: 'groupSeen',
  events: 'groupEvents',
  projection: 'groupProjection',
};
const CATALOG_FAMILY: Readonly<Record<string, string>> = {
  groups: 'groupsIndex',
  streams: 'streams',
  'catalog-version': 'catalogVersion',
  health: 'readinessProbe',
  incarnation: 'incarnation',
  'unwritten-shards': 'unwrittenShards',
};

/**
 * Reads a key back into its family and names, following the layout of docs/protocol.md §13, or
 * `null` when no family builds it. Because this is a function, a round trip
 * `decodeKey(build(x)) = x` for every x proves that no two names (of one family or of two
 * families) build the same key.
 */
function decodeKey(key: string): Named | null {
  const colon = key.indexOf(':');
  const prefix = key.slice(0, colon);
  if (colon < 0 || !PREFIX.test(prefix) || key[colon + 1] !== '{') return null;
  const close = key.indexOf('}', colon);
  if (close < 0) return null;
  const tag = key.slice(colon + 2, close);
  const rest = key.slice(close + 1);
  const named = (family: string, ...args: (string | number)[]): Named => ({
    family,
    prefix,
    args,
  });
  if (tag.startsWith('@g:')) {
    const group = tag.slice(3);
    const part = rest.slice(1);
    if (!NAME_PATTERN.test(group) || !rest.startsWith(':')) return null;
    return GROUP_FAMILY[part] ? named(GROUP_FAMILY[part], group) : null;
  }
  if (tag === '@m') {
    if (rest.startsWith(':stream-events:')) {
      const stream = rest.slice(':stream-events:'.length);
      return NAME_PATTERN.test(stream) ? named('streamEvents', stream) : null;
    }
    const family = rest.startsWith(':') ? CATALOG_FAMILY[rest.slice(1)] : undefined;
    return family ? named(family) : null;
  }
  if (NAME_PATTERN.test(tag)) {
    if (rest === ':dlq') return named('deadLetter', tag);
    return rest === ':dlq:replays' ? named('deadLetterReplays', tag) : null;
  }
  const sep = tag.lastIndexOf(':');
  const stream = tag.slice(0, sep);
  const id = tag.slice(sep + 1);
  if (sep < 0 || !NAME_PATTERN.test(stream) || !/^(0|[1-9]\d*)$/.test(id)) return null;
  const shard = Number(id);
  if (rest === '') return named('shard', stream, shard);
  if (rest === ':meta') return named('shardMeta', stream, shard);
  if (!rest.startsWith(':gate:')) return null;
  const gate = rest.slice(':gate:'.length);
  const groupEnd = gate.indexOf(':');
  const group = gate.slice(0, groupEnd);
  const member = gate.slice(groupEnd + 1);
  if (groupEnd < 0 || !NAME_PATTERN.test(group) || !ID_PATTERN.test(member)) return null;
  return named('shardGate', stream, shard, group, member);
}

/** Reads a pub/sub channel back into its family and names, or `null`. */
function decodeChannel(channel: string): Named | null {
  const colon = channel.indexOf(':');
  const prefix = channel.slice(0, colon);
  if (colon < 0 || !PREFIX.test(prefix)) return null;
  const rest = channel.slice(colon + 1);
  if (rest === 'streams-changed') return { family: 'streamsChanged', prefix, args: [] };
  const group = rest.slice('nudge:'.length);
  return rest.startsWith('nudge:') && NAME_PATTERN.test(group)
    ? { family: 'nudge', prefix, args: [group] }
    : null;
}

/** Redis Cluster's hash tag of a key (the part its slot is computed from). */
function hashTag(key: string): string {
  const open = key.indexOf('{');
  if (open < 0) return key;
  const close = key.indexOf('}', open + 1);
  return close <= open + 1 ? key : key.slice(open + 1, close);
}

/** Names that look like each other's parts: digits, family words, the tag letters. */
const TRICKY_NAMES = ['0', '1', '10', 'g', 'm', 's', 'meta', 'gate', 'dlq', 'events', '@g', 'g-0'];
const nameArb = fc.oneof(
  { arbitrary: fc.constantFrom(...TRICKY_NAMES.filter((x) => NAME_PATTERN.test(x))), weight: 3 },
  { arbitrary: fc.stringMatching(/^[A-Za-z0-9._-]{1,20}$/), weight: 2 },
  { arbitrary: fc.stringMatching(/^[A-Za-z0-9._-]{128}$/), weight: 1 },
);
const idArb = fc.oneof(
  { arbitrary: fc.constantFrom('0', 'm', 'a:b', '{x}', '}', ':', 'gate:0:1', '@g:0'), weight: 2 },
  { arbitrary: fc.stringMatching(/^[\x21-\x7e]{1,40}$/), weight: 2 },
);
const shardArb = fc.oneof(fc.nat({ max: 3 }), fc.nat({ max: 2 ** 31 - 1 }));
const prefixArb = fc.oneof(
  fc.constantFrom('rsc', 'g', 'm', '0'),
  fc.stringMatching(/^[A-Za-z0-9._-]{1,64}$/),
);

function argsArb(arity: string): fc.Arbitrary<(string | number)[]> {
  return fc.tuple(
    ...arity.split('').map((c): fc.Arbitrary<string | number> => {
      if (c === 'N') return shardArb;
      if (c === 'M') return idArb;
      return nameArb;
    }),
  );
}

function namedArb(families: Readonly<Record<string, { arity: string }>>): fc.Arbitrary<Named> {
  return fc.oneof(
    ...Object.entries(families).map(([family, { arity }]) =>
      fc
        .tuple(prefixArb, argsArb(arity))
        .map(([prefix, args]): Named => ({ family, prefix, args })),
    ),
  );
}

const build = (families: Readonly<Record<string, { build: Builder }>>, x: Named): string =>
  (families[x.family] as { build: Builder }).build(new KeySpace(x.prefix), x.args);

describe('key space: every key family is disjoint from every other, by construction', () => {
  it('covers every key-building method of KeySpace', () => {
    const methods = Object.getOwnPropertyNames(KeySpace.prototype).filter((m) =>
      /(Key|Channel)$/.test(m),
    );
    expect(methods.sort()).toEqual(Object.values(METHOD_OF).sort());
  });

  it('groupFromMeta reads a group back from its meta key only (the index repair relies on it)', () => {
    fc.assert(
      fc.property(namedArb(KEY_FAMILIES), prefixArb, (x, prefix) => {
        const expected = x.family === 'groupMeta' && x.prefix === prefix ? x.args[0] : null;
        expect(new KeySpace(prefix).groupFromMeta(build(KEY_FAMILIES, x))).toBe(expected);
      }),
      { numRuns: 5000 },
    );
    expect(new KeySpace('rsc').groupMetaKeyPattern()).toBe('rsc:{@g:*}:meta');
  });

  it('a key reads back to exactly the family and names it was built from', () => {
    fc.assert(
      fc.property(namedArb(KEY_FAMILIES), (x) => {
        expect(decodeKey(build(KEY_FAMILIES, x))).toEqual(x);
      }),
      { numRuns: 5000 },
    );
  });

  it('a pub/sub channel reads back to exactly the family and names it was built from', () => {
    fc.assert(
      fc.property(namedArb(CHANNEL_FAMILIES), (x) => {
        expect(decodeChannel(build(CHANNEL_FAMILIES, x))).toEqual(x);
      }),
      { numRuns: 1000 },
    );
  });

  it('two random names of any families give one key only when they are the same names', () => {
    fc.assert(
      fc.property(namedArb(KEY_FAMILIES), namedArb(KEY_FAMILIES), (a, b) => {
        const same = build(KEY_FAMILIES, a) === build(KEY_FAMILIES, b);
        expect(same).toBe(JSON.stringify(a) === JSON.stringify(b));
      }),
      { numRuns: 5000 },
    );
  });

  it('no two keys collide over a small universe of look-alike names (exhaustive)', () => {
    const names = ['0', '1', 'g', 'm', 'meta', 'dlq', 'events'];
    const ids = ['0', 'm', 'a:b', '{x}'];
    const values: Readonly<Record<string, readonly (string | number)[]>> = {
      S: names,
      G: names,
      N: [0, 1, 10],
      M: ids,
    };
    const seen = new Map<string, string>();
    for (const prefix of ['rsc', 'g']) {
      for (const [family, { arity, build: make }] of Object.entries(KEY_FAMILIES)) {
        let combos: (string | number)[][] = [[]];
        for (const c of arity) {
          combos = combos.flatMap((combo) => (values[c] ?? []).map((v) => [...combo, v]));
        }
        for (const args of combos) {
          const key = make(new KeySpace(prefix), args);
          const who = JSON.stringify({ family, prefix, args });
          const before = seen.get(key);
          if (before !== undefined) expect.fail(`${key} is built by ${before} and by ${who}`);
          seen.set(key, who);
        }
      }
    }
    expect(seen.size).toBeGreaterThan(1000);
  });
});

describe('key space: Redis Cluster hash tags', () => {
  it('every key has a hash tag; the keys one Lua script touches share it', () => {
    fc.assert(
      fc.property(prefixArb, nameArb, nameArb, shardArb, idArb, (prefix, stream, group, id, m) => {
        const keys = new KeySpace(prefix);
        // Group store scripts: the group's keys.
        const groupKeys = GROUP_PARTS.map((part) =>
          build(KEY_FAMILIES, { family: GROUP_FAMILY[part] ?? '', prefix, args: [group] }),
        );
        expect(new Set(groupKeys.map(hashTag))).toEqual(new Set([`@g:${group}`]));
        // Stream catalog write script: catalog hash, version counter, the stream's event log.
        const catalog = [keys.streamsKey(), keys.catalogVersionKey(), keys.streamEventsKey(stream)];
        expect(new Set(catalog.map(hashTag))).toEqual(new Set(['@m']));
        // Publish, fence and gate scripts: a shard, its meta hash, its read gates.
        const shard = keys.shardKey(stream, id);
        const shardKeys = [shard, shardMetaKey(shard), shardGateKey(shard, group, m)];
        expect(new Set(shardKeys.map(hashTag))).toEqual(new Set([`${stream}:${id}`]));
        // Control-plane tags never equal a data-plane tag (no slot shared by accident either).
        for (const control of [...groupKeys, ...catalog, keys.groupsIndexKey()]) {
          expect(hashTag(control)).not.toBe(hashTag(shard));
          expect(hashTag(control)).not.toBe(hashTag(keys.deadLetterKey(stream)));
        }
      }),
      { numRuns: 2000 },
    );
  });
});
