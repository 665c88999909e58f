import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/service-process.js';

/**
 * Static Redis Cluster audit of every Lua script in the coordinator and the library: each key a
 * script touches must come from `KEYS` (or be a declared key with a literal suffix, or a derived
 * key listed below; never a name built at run time), so that Redis can route
 * the call by its declared keys and refuse a cross-slot one (the callers declare keys of one hash
 * tag only; the cluster suite runs them all on a real cluster and checks no CROSSSLOT error).
 */

/** Where each command takes its keys. */
type KeyRule =
  | { readonly kind: 'none' }
  | { readonly kind: 'at'; readonly index: number }
  | { readonly kind: 'all' }
  | { readonly kind: 'streams' };

const at = (index: number): KeyRule => ({ kind: 'at', index });
const RULES: Readonly<Record<string, KeyRule>> = {
  TIME: { kind: 'none' },
  PUBLISH: { kind: 'none' }, // a channel, not a key (cluster-wide broadcast)
  PING: { kind: 'none' },
  DEL: { kind: 'all' },
  UNLINK: { kind: 'all' },
  EXISTS: { kind: 'all' },
  RENAME: { kind: 'all' }, // RENAME <key> <newkey>
  XREADGROUP: { kind: 'streams' },
  XREAD: { kind: 'streams' },
  XGROUP: at(1), // XGROUP <subcommand> <key> …
  XINFO: at(1), // XINFO <subcommand> <key> …
};
/** Commands whose first argument is their only key. */
const SINGLE_KEY = [
  'GET',
  'SET',
  'INCR',
  'INCRBY',
  'EXPIRE',
  'PEXPIRE',
  'TYPE',
  'HGET',
  'HSET',
  'HSETNX',
  'HDEL',
  'HMGET',
  'HGETALL',
  'HLEN',
  'HEXISTS',
  'HINCRBY',
  'ZADD',
  'ZREM',
  'ZSCORE',
  'ZRANGE',
  'ZRANGEBYSCORE',
  'ZCARD',
  'SADD',
  'SREM',
  'SMEMBERS',
  'XADD',
  'XACK',
  'XPENDING',
  'XCLAIM',
  'XAUTOCLAIM',
  'XRANGE',
  'XREVRANGE',
  'XLEN',
  'XTRIM',
  'XDEL',
  'XSETID',
];

const KEY_REF = /^KEYS\[\d+\]$/;
/**
 * A declared key plus a literal suffix (`KEYS[1] .. ':meta'`): the hash tag is the key's first
 * `{…}`, which the suffix (no braces) leaves alone, so the key is in the declared key's slot
 * (every key has a tag: docs/protocol.md §13.1). The member's and producer's scripts read the
 * shard's meta hash this way, undeclared, so a user that may only read it can run them
 * (docs/protocol.md §13.5).
 */
const SUFFIXED_KEY_REF = /^KEYS\[\d+\] \.\. '[^'{}]+'$/;

/**
 * Undeclared keys a script builds on purpose, by file and Lua variable. Redis 7 allows a script to
 * touch keys it did not declare as long as they hash to the slot of the declared ones (a key of
 * another slot fails with "Script attempted to access keys that do not hash to the same slot";
 * the cluster suite runs these scripts on a real cluster). During a live slot migration such a
 * key that is already gone from the source node fails the call with an ASK-style "non local key"
 * error instead of TRYAGAIN; the callers retry. Each entry must say why the key shares the slot.
 */
const DERIVED_KEYS: Readonly<Record<string, readonly string[]>> = {
  // Read gates `<shardKey>:gate:<group>:<member>` (fence grant/release, shard deletion): built
  // from the shard key (its hash tag comes first), so they live in the slot of the shard's keys;
  // a recorded key without the shard's gate prefix is ignored by the scripts. `key` iterates the
  // shard deletion's list: KEYS[1], KEYS[2] and such gates.
  'apps/coordinator/src/store/fence.scripts.ts': ['recorded', 'derived', 'key'],
};

interface LuaCall {
  readonly file: string;
  readonly text: string;
  readonly args: readonly string[];
}

/** Every `.ts` source (not a spec) under `dir`. */
function sources(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      if (entry.name !== 'dist' && entry.name !== 'node_modules') out.push(...sources(path));
    } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts')) {
      out.push(path);
    }
  }
  return out;
}

/** Splits `a, {b, c}, f(d, e)` at top-level commas. */
function splitArgs(text: string): string[] {
  const args: string[] = [];
  let depth = 0;
  let quote: string | null = null;
  let current = '';
  for (const ch of text) {
    if (quote) {
      current += ch;
      if (ch === quote) quote = null;
      continue;
    }
    if (ch === "'" || ch === '"') quote = ch;
    else if ('({['.includes(ch)) depth++;
    else if (')}]'.includes(ch)) depth--;
    if (ch === ',' && depth === 0) {
      args.push(current.trim());
      current = '';
    } else current += ch;
  }
  if (current.trim() !== '') args.push(current.trim());
  return args;
}

/** Every `redis.call(…)` / `redis.pcall(…)` in the Lua template literals of `file`. */
function luaCalls(file: string): { calls: LuaCall[]; lua: string[] } {
  const text = readFileSync(file, 'utf8');
  const lua = [...text.matchAll(/`([^`]*)`/g)]
    .map((m) => m[1] as string)
    .filter((s) => /redis\.p?call\(/.test(s));
  const calls: LuaCall[] = [];
  for (const script of lua) {
    for (const match of script.matchAll(/redis\.p?call\(/g)) {
      let depth = 1;
      let i = (match.index ?? 0) + match[0].length;
      const start = i;
      for (; i < script.length && depth > 0; i++) {
        if (script[i] === '(') depth++;
        else if (script[i] === ')') depth--;
      }
      const inner = script.slice(start, i - 1);
      calls.push({ file, text: `redis.call(${inner})`, args: splitArgs(inner) });
    }
  }
  return { calls, lua };
}

/** Problems of one call: keys that do not come from KEYS, commands the table does not know. */
function problemsOf(call: LuaCall, scripts: readonly string[]): string[] {
  const where = `${relative(repoRoot(), call.file)}: ${call.text.replace(/\s+/g, ' ')}`;
  const [first = '', ...rest] = call.args;
  const dynamic = /^unpack\((\w+)\)$/.exec(first);
  if (dynamic) {
    // `redis.call(unpack(args))`: the table must start with a literal command and a KEYS entry.
    const name = dynamic[1] as string;
    const built = scripts.some((s) =>
      new RegExp(`local ${name} = \\{ '([A-Z]+)', (KEYS\\[\\d+\\])`).test(s),
    );
    return built ? [] : [`${where}: the command table ${name} does not start with 'CMD', KEYS[n]`];
  }
  const command = /^'([A-Za-z]+)'$/.exec(first)?.[1]?.toUpperCase();
  if (command === undefined) return [`${where}: the command is not a literal`];
  const rule = RULES[command] ?? (SINGLE_KEY.includes(command) ? at(0) : undefined);
  if (rule === undefined) return [`${where}: ${command} is not in the audit's key table`];
  const keys: string[] = [];
  if (rule.kind === 'at') keys.push(rest[rule.index] ?? '(missing)');
  else if (rule.kind === 'all') keys.push(...rest);
  else if (rule.kind === 'streams') {
    const from = rest.findIndex((a) => a.toUpperCase() === "'STREAMS'");
    const tail = rest.slice(from + 1);
    keys.push(...tail.slice(0, Math.ceil(tail.length / 2)));
  }
  const derived = DERIVED_KEYS[relative(repoRoot(), call.file)] ?? [];
  return keys
    .filter((k) => !KEY_REF.test(k) && !SUFFIXED_KEY_REF.test(k) && !derived.includes(k))
    .map((k) => `${where}: key ${k} is not KEYS[n]`);
}

describe('Lua scripts on Redis Cluster (static audit)', () => {
  const root = repoRoot();
  const files = [...sources(join(root, 'apps')), ...sources(join(root, 'libs'))];
  const found = files
    .map((file) => ({ file, ...luaCalls(file) }))
    .filter((f) => f.calls.length > 0 || /redis\.p?call\(/.test(readFileSync(f.file, 'utf8')));

  it('finds the scripts of the coordinator and of the library', () => {
    const names = found.map((f) => relative(root, f.file));
    expect(names).toEqual(
      expect.arrayContaining([
        'apps/coordinator/src/store/group-store.scripts.ts',
        'apps/coordinator/src/store/fence.scripts.ts',
        'apps/coordinator/src/store/stream-store.scripts.ts',
        'libs/stream-coordinator/src/data-plane/scripts/fence-check.lua.ts',
        'libs/stream-coordinator/src/producer/scripts/publish.script.ts',
      ]),
    );
    expect(found.reduce((n, f) => n + f.calls.length, 0)).toBeGreaterThan(30);
  });

  it('sees every call (none hides outside the template literals it parses)', () => {
    for (const f of found) {
      const raw = (readFileSync(f.file, 'utf8').match(/redis\.p?call\(/g) ?? []).length;
      expect(f.calls.length, relative(root, f.file)).toBe(raw);
    }
  });

  it('every key a script touches is one of its declared KEYS', () => {
    const problems = found.flatMap((f) => f.calls.flatMap((call) => problemsOf(call, f.lua)));
    expect(problems).toEqual([]);
  });

  it('the audit rejects a key built at run time', () => {
    const bad: LuaCall = {
      file: join(root, 'example.ts'),
      text: "redis.call('HGET', 'rsc:{m}:' .. ARGV[1], 'x')",
      args: splitArgs("'HGET', 'rsc:{m}:' .. ARGV[1], 'x'"),
    };
    expect(problemsOf(bad, [])).toHaveLength(1);
    // a declared key with a literal suffix stays in its slot; a built or braced suffix does not
    for (const [key, problems] of [
      ["KEYS[1] .. ':meta'", 0],
      ['KEYS[1] .. ARGV[1]', 1],
      ["KEYS[1] .. ':{other}'", 1],
    ] as const) {
      const call: LuaCall = {
        file: join(root, 'example.ts'),
        text: key,
        args: splitArgs(`'HGET', ${key}, 'state'`),
      };
      expect(problemsOf(call, []), key).toHaveLength(problems);
    }
    const streams: LuaCall = {
      file: join(root, 'example.ts'),
      text: '',
      args: splitArgs(
        "'XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'STREAMS', KEYS[1], ARGV[9], '>', '>'",
      ),
    };
    expect(problemsOf(streams, [])).toHaveLength(1);
  });
});
