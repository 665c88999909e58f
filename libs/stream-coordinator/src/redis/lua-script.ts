import { DirectReaderClient } from './direct/direct-reader-client.js';
import type { LuaScript, ScriptArgument } from './lua-script.types.js';
import type { ReaderRedis, RedisConnection } from './redis-connection.types.js';

export type { LuaScript, ScriptArgument } from './lua-script.types.js';

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
 * Runs `script` on `connection`: on an ioredis client through the command `defineScripts`
 * registers (first if needed), on a direct reader connection through its `evalScript`. With
 * `buffers`, bulk replies come back as `Buffer`s (on ioredis, the `…Buffer` variant it defines
 * next to every command).
 */
export function runScript(
  connection: ReaderRedis,
  script: LuaScript,
  args: readonly ScriptArgument[],
  buffers = false,
): Promise<unknown> {
  if (connection instanceof DirectReaderClient) return connection.evalScript(script, args, buffers);
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
