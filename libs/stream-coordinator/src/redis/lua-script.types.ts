/**
 * A Lua script the library runs with `EVALSHA` (falling back to `EVAL`): registered on each
 * ioredis connection through `defineCommand`, which works on `Redis` and on `Cluster` (the
 * command is routed by its first key), or sent by a direct reader connection's `evalScript`.
 * Scripts touch only the keys they are given, all in one hash slot.
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
