import { shardMetaKey } from '../protocol/key-space.js';
import { runScript, type LuaScript, type ScriptArgument } from '../redis/lua-script.js';
import type { RedisConnection } from '../redis/redis-connection.types.js';
import { FencedError } from './fenced.error.js';
import type { AckAndReadReply, ClaimReply, RawStreamEntry } from './raw-entry.types.js';
import { ACK_AND_READ_SCRIPT } from './scripts/ack-and-read.script.js';
import { ACK_SCRIPT } from './scripts/ack.script.js';
import { ACQUIRE_SCRIPT } from './scripts/acquire.script.js';
import { CLAIM_SCRIPT } from './scripts/claim.script.js';
import { REDELIVER_SCRIPT } from './scripts/redeliver.script.js';

/** Every fenced data-plane script. @publicApi */
export const DATA_PLANE_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE_SCRIPT,
  CLAIM_SCRIPT,
  ACK_AND_READ_SCRIPT,
  ACK_SCRIPT,
  REDELIVER_SCRIPT,
];

/**
 * The fenced data-plane commands of one member on one shard for one group. Every method runs
 * one same-slot Lua script (KEYS: the shard stream and its meta hash) and rejects with
 * {@link FencedError} when the fence does not name `memberId`.
 *
 * @publicApi
 */
export class ShardCommands {
  /** The shard's meta hash. */
  readonly metaKey: string;
  private readonly head: readonly string[];

  constructor(
    readonly key: string,
    readonly group: string,
    readonly memberId: string,
  ) {
    this.metaKey = shardMetaKey(key);
    this.head = [key, this.metaKey, group, memberId];
  }

  /** Fence check, then create the consumer group if missing. */
  async acquire(connection: RedisConnection): Promise<void> {
    await this.run(connection, ACQUIRE_SCRIPT, [], false);
  }

  /** Fence check, then take over up to `count` pending entries from `cursor` (XAUTOCLAIM). */
  async claim(connection: RedisConnection, cursor: string, count: number): Promise<ClaimReply> {
    const reply = (await this.run(connection, CLAIM_SCRIPT, [cursor, count], true)) as [
      Buffer,
      RawStreamEntry[],
      Buffer[],
    ];
    return {
      cursor: reply[0].toString('latin1'),
      entries: reply[1],
      deletedIds: reply[2].map((id) => id.toString('latin1')),
    };
  }

  /** Fence check, XACK `acks`, then read up to `count` new entries (see the script). */
  async ackAndRead(
    connection: RedisConnection,
    acks: readonly string[],
    count: number,
  ): Promise<AckAndReadReply> {
    const reply = (await this.run(
      connection,
      ACK_AND_READ_SCRIPT,
      [count, 'entries', ...acks],
      true,
    )) as [1, RawStreamEntry[]] | [0, Buffer] | [2];
    if (reply[0] === 1) return { kind: 'entries', entries: reply[1] };
    if (reply[0] === 0) return { kind: 'empty', lastId: reply[1].toString('latin1') };
    return { kind: 'orphans' };
  }

  /**
   * Same as {@link ackAndRead} when the group's last delivered id is known to be `afterId`
   * (the last id this member read): the script returns only the ids it delivered and a plain
   * `XRANGE <key> (<afterId> + COUNT <count>` sent right behind it fetches the fields. If the
   * XRANGE does not hold exactly the delivered entries (a concurrent delete, or `afterId` was
   * not the group's position), the reply is `orphans`: the claim phase then takes the
   * delivered entries from the pending list, so nothing is lost.
   */
  async ackAndReadAfter(
    connection: RedisConnection,
    acks: readonly string[],
    count: number,
    afterId: string,
  ): Promise<AckAndReadReply> {
    const script = this.run(connection, ACK_AND_READ_SCRIPT, [count, 'ids', ...acks], true);
    const range = connection.xrangeBuffer(this.key, `(${afterId}`, '+', 'COUNT', count);
    let reply: [3, number, Buffer, Buffer] | [0, Buffer] | [2];
    try {
      reply = (await script) as typeof reply;
    } catch (error) {
      range.catch(() => undefined);
      throw error;
    }
    const entries = (await range) as unknown as RawStreamEntry[];
    if (reply[0] === 0) return { kind: 'empty', lastId: reply[1].toString('latin1') };
    if (reply[0] === 2) return { kind: 'orphans' };
    const delivered = reply[1];
    const first = entries[0];
    const last = entries[delivered - 1];
    if (
      first === undefined ||
      last === undefined ||
      !first[0].equals(reply[2]) ||
      !last[0].equals(reply[3])
    ) {
      return { kind: 'orphans' };
    }
    if (entries.length > delivered) entries.length = delivered;
    return { kind: 'entries', entries };
  }

  /** Fence check, then XACK `ids` (none: only the fence check). Resolves to the acked count. */
  async ack(connection: RedisConnection, ids: readonly string[]): Promise<number> {
    return (await this.run(connection, ACK_SCRIPT, ids, false)) as number;
  }

  /**
   * Fence check, then XCLAIM `id` to this member again (a new delivery: the delivery count goes
   * up). Resolves to the entry with its new count, or `null` when it was deleted or trimmed.
   */
  async redeliver(connection: RedisConnection, id: string): Promise<RawStreamEntry | null> {
    const reply = (await this.run(connection, REDELIVER_SCRIPT, [id], true)) as
      [1, Buffer, Buffer[], number] | [0];
    return reply[0] === 1 ? [reply[1], reply[2], reply[3]] : null;
  }

  private async run(
    connection: RedisConnection,
    script: LuaScript,
    args: readonly ScriptArgument[],
    buffers: boolean,
  ): Promise<unknown> {
    try {
      return await runScript(connection, script, [...this.head, ...args], buffers);
    } catch (error) {
      throw FencedError.fromReply(error, this.key, this.group, this.memberId) ?? error;
    }
  }
}
