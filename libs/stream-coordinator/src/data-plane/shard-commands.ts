import { FencedError } from '../errors/data-plane/fenced.error.js';
import { ShardReadRefusedError } from '../errors/data-plane/shard-read-refused.error.js';
import { shardGateKey, shardMetaKey } from '../protocol/key-space.js';
import { runScript, type LuaScript, type ScriptArgument } from '../redis/lua-script.js';
import type { ReaderRedis } from '../redis/redis-connection.types.js';
import type { ClaimReply, RawStreamEntry } from './raw-entry.types.js';
import { ACK_BEFORE_READ_SCRIPT } from './scripts/ack-before-read.script.js';
import { ACK_SCRIPT } from './scripts/ack.script.js';
import { ACQUIRE_SCRIPT } from './scripts/acquire.script.js';
import { encodeEntryIds } from './scripts/entry-id-list.js';
import { CLAIM_SCRIPT } from './scripts/claim.script.js';
import { REDELIVER_SCRIPT } from './scripts/redeliver.script.js';
import { RELEASE_CONSUMER_SCRIPT } from './scripts/release-consumer.script.js';
import { UNCOUNT_SCRIPT } from './scripts/uncount.script.js';

/** Every fenced data-plane script. */
export const DATA_PLANE_SCRIPTS: readonly LuaScript[] = [
  ACQUIRE_SCRIPT,
  CLAIM_SCRIPT,
  ACK_BEFORE_READ_SCRIPT,
  ACK_SCRIPT,
  REDELIVER_SCRIPT,
  RELEASE_CONSUMER_SCRIPT,
  UNCOUNT_SCRIPT,
];

/** What the reader tells {@link ShardCommands.claim} about the entries pending on its member. */
export interface ClaimContext {
  /** The entry last handed to the handler, at the delivery count it was handed with. */
  readonly handed?: { readonly id: string; readonly deliveryCount: number };
  /**
   * Entries pending on this member from this id on were not taken over by the current reader
   * yet (an earlier reader of the same member id left them): taking them is a new delivery.
   * `'0-0'` before the reader's first claim; absent once its first claim pass went through.
   */
  readonly foreignFrom?: string;
  /**
   * How many pending entries from `foreignFrom` on a claim of this reader may have taken
   * already (its reply was lost): they are not counted again. 0 (default) otherwise.
   */
  readonly maybeTaken?: number;
  /**
   * `ordering: 'key'` (then `handed` is not used): the entries handed to the handler and not
   * acknowledged, each at the count it was handed with (see the `claim` script).
   */
  readonly keyOrder?: { readonly handed: ReadonlyMap<string, number> };
}

/** Reply of {@link ShardCommands.ackBeforeRead}: entries acked, or -1 when orphans are pending. */
export const ORPHANS_PENDING = -1;

type XReadGroupReply = Array<[key: Buffer, entries: Array<[id: Buffer, fields: Buffer[]]>]> | null;

/**
 * The data-plane commands of one member on one shard for one group.
 *
 * Acks, claims and redeliveries run one same-slot Lua script each (KEYS: the shard stream; the
 * script reads its meta hash, docs/protocol.md §13.5) and reject with {@link FencedError} when the fence token does not name `memberId`.
 * Reads are one plain `XREADGROUP` through this member's read gate (`gateKey`, see
 * `shardGateKey`): it delivers nothing unless the gate exists, which the coordinator ensures only
 * while the token names this member.
 */
export class ShardCommands {
  /** The shard's meta hash. */
  readonly metaKey: string;
  /** This member's read gate on the shard for the group. */
  readonly gateKey: string;
  private readonly head: readonly string[];

  constructor(
    readonly key: string,
    readonly group: string,
    readonly memberId: string,
  ) {
    this.metaKey = shardMetaKey(key);
    this.gateKey = shardGateKey(key, group, memberId);
    this.head = [key, group, memberId];
  }

  /**
   * Fence check, then gate check, then create the consumer group if missing, at the shard's
   * first entry (`start` `0`) or its next one (`$`; not on a shard a reshard created). Resolves
   * `ready`, or `no-gate` when the fence names this member but its read gate does not exist (yet).
   */
  async acquire(connection: ReaderRedis, start: '0' | '$' = '0'): Promise<'ready' | 'no-gate'> {
    const args = [this.key, this.gateKey, this.group, this.memberId, start];
    let reply: unknown;
    try {
      reply = await runScript(connection, ACQUIRE_SCRIPT, args, false);
    } catch (error) {
      throw FencedError.fromReply(error, this.key, this.group, this.memberId) ?? error;
    }
    return reply === 'NOGATE' ? 'no-gate' : 'ready';
  }

  /**
   * Fence check, then take over up to `count` pending entries from `cursor` (the `claim`
   * script). Taking an entry counts a new delivery, except an entry pending on this member that
   * the current reader took or read and never handed to the handler (see {@link ClaimContext}):
   * re-reading what the handler never saw is not a delivery. With `keyOrder`, an own entry is
   * counted only when it was handed at its current count.
   */
  async claim(
    connection: ReaderRedis,
    cursor: string,
    count: number,
    context: ClaimContext = {},
  ): Promise<ClaimReply> {
    const { handed, foreignFrom, maybeTaken, keyOrder } = context;
    const args: ScriptArgument[] = [
      cursor,
      count,
      keyOrder === undefined ? (handed?.id ?? '') : '',
      handed?.deliveryCount ?? 0,
      foreignFrom ?? '',
      maybeTaken ?? 0,
    ];
    if (keyOrder !== undefined) {
      args.push('key', keyOrder.handed.size);
      for (const [id, deliveryCount] of keyOrder.handed) args.push(id, deliveryCount);
    }
    const reply = (await this.run(connection, CLAIM_SCRIPT, args, true)) as [
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

  /**
   * Fence check, XACK `acks`, then the orphan check (see the `ackBeforeRead` script): resolves
   * to the acked count, or {@link ORPHANS_PENDING} when entries are pending on this member that
   * it never saw (with `seenUpTo`: above that id). Send it right before {@link read} on the same
   * connection.
   */
  async ackBeforeRead(
    connection: ReaderRedis,
    acks: readonly string[],
    seenUpTo?: string,
  ): Promise<number> {
    const args = seenUpTo === undefined ? [encodeEntryIds(acks)] : [encodeEntryIds(acks), seenUpTo];
    return (await this.run(connection, ACK_BEFORE_READ_SCRIPT, args, false)) as number;
  }

  /**
   * The gated read: `XREADGROUP GROUP <group> <memberId> COUNT <count> [BLOCK <blockMs>] STREAMS
   * <gateKey> <key> > >`. Resolves to the new entries (none after a block timed out).
   *
   * @throws ShardReadRefusedError when the gate or the consumer group is missing, or a blocked
   *   read was ended by a deletion (nothing was delivered).
   */
  async read(connection: ReaderRedis, count: number, blockMs?: number): Promise<RawStreamEntry[]> {
    let reply: XReadGroupReply;
    try {
      reply = (await (blockMs === undefined
        ? connection.xreadgroupBuffer(
            'GROUP',
            this.group,
            this.memberId,
            'COUNT',
            count,
            'STREAMS',
            this.gateKey,
            this.key,
            '>',
            '>',
          )
        : connection.xreadgroupBuffer(
            'GROUP',
            this.group,
            this.memberId,
            'COUNT',
            count,
            'BLOCK',
            blockMs,
            'STREAMS',
            this.gateKey,
            this.key,
            '>',
            '>',
          ))) as unknown as XReadGroupReply;
    } catch (error) {
      throw ShardReadRefusedError.fromReply(error, this.key, this.gateKey) ?? error;
    }
    // The gate never holds entries, so the reply names the shard alone (or is null).
    return reply === null ? [] : (reply[0]?.[1] ?? []);
  }

  /** Fence check, then XACK `ids` (none: only the fence check). Resolves to the acked count. */
  async ack(connection: ReaderRedis, ids: readonly string[]): Promise<number> {
    return (await this.run(connection, ACK_SCRIPT, [encodeEntryIds(ids)], false)) as number;
  }

  /**
   * Fence check, then XCLAIM `id` to this member again (a new delivery: the delivery count goes
   * up). Resolves to the entry with its new count, or `null` when it was deleted or trimmed.
   */
  async redeliver(connection: ReaderRedis, id: string): Promise<RawStreamEntry | null> {
    const reply = (await this.run(connection, REDELIVER_SCRIPT, [id], true)) as
      [1, Buffer, Buffer[], number] | [0];
    return reply[0] === 1 ? [reply[1], reply[2], reply[3]] : null;
  }

  /**
   * Fence check, then takes one delivery off each of `ids` still pending on this member (the
   * `uncount` script). Resolves to how many were changed and the ids found deleted or trimmed
   * (dropped from the pending list).
   */
  async uncount(
    connection: ReaderRedis,
    ids: readonly string[],
  ): Promise<{ changed: number; deletedIds: string[] }> {
    const [changed, deleted] = (await this.run(connection, UNCOUNT_SCRIPT, ids, false)) as [
      number,
      string[],
    ];
    return { changed, deletedIds: deleted };
  }

  /**
   * Removes this member's consumer from the shard's consumer group unless entries are pending on
   * it (see the `releaseConsumer` script; not fenced). Resolves `deleted`, `kept` (entries
   * pending), or `no-group`.
   */
  async releaseConsumer(connection: ReaderRedis): Promise<'deleted' | 'kept' | 'no-group'> {
    const reply = await runScript(
      connection,
      RELEASE_CONSUMER_SCRIPT,
      [this.key, this.group, this.memberId],
      false,
    );
    return reply === 1 ? 'deleted' : reply === 0 ? 'kept' : 'no-group';
  }

  private async run(
    connection: ReaderRedis,
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
