import type { RedisConnection } from './redis-connection.types.js';

/**
 * A Lua script the library runs with `EVALSHA` (falling back to `EVAL`), registered on each
 * connection through ioredis `defineCommand`, which works on `Redis` and on `Cluster` (the
 * command is routed by its first key). Scripts touch only the keys they are given, all in one
 * hash slot.
 */
export interface LuaScript {
  /** Command name on the connection; unique across the library (`rsc` prefix). */
  readonly name: string;
  /** How many leading arguments are keys. */
  readonly numberOfKeys: number;
  /** The script body. */
  readonly lua: string;
}

/** A script argument as ioredis sends it. */
export type ScriptArgument = string | Buffer | number;

type ScriptMethod = (...args: ScriptArgument[]) => Promise<unknown>;

const defined = new WeakMap<RedisConnection, Set<string>>();

/**
 * Registers `scripts` on `connection` once (later calls for the same connection are no-ops).
 */
export function defineScripts(connection: RedisConnection, scripts: readonly LuaScript[]): void {
  let names = defined.get(connection);
  if (!names) {
    names = new Set();
    defined.set(connection, names);
  }
  for (const script of scripts) {
    if (names.has(script.name)) continue;
    connection.defineCommand(script.name, { numberOfKeys: script.numberOfKeys, lua: script.lua });
    names.add(script.name);
  }
}

/**
 * Runs `script` on `connection` (registering it first if needed). With `buffers`, bulk replies
 * come back as `Buffer`s (the `…Buffer` variant ioredis defines next to every command).
 */
export function runScript(
  connection: RedisConnection,
  script: LuaScript,
  args: readonly ScriptArgument[],
  buffers = false,
): Promise<unknown> {
  if (defined.get(connection)?.has(script.name) !== true) defineScripts(connection, [script]);
  const method = (connection as unknown as Record<string, ScriptMethod | undefined>)[
    buffers ? `${script.name}Buffer` : script.name
  ];
  if (typeof method !== 'function') {
    return Promise.reject(
      new Error(`Lua script ${script.name} is not registered on the connection`),
    );
  }
  return method.apply(connection, args as ScriptArgument[]);
}
