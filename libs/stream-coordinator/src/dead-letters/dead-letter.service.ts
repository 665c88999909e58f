import { randomUUID } from 'node:crypto';
import { DeadLetterArgumentError } from '../errors/dead-letters/dead-letter-argument.error.js';
import type { PayloadSerializer } from '../interfaces/payload-serializer.interface.js';
import { RoutingCache } from '../producer/routing-cache.js';
import type { RoutingSource } from '../interfaces/routing-source.interface.js';
import { StreamPublisher } from '../producer/stream-publisher.js';
import {
  REPLAY_OF_HEADER,
  type DeadLetterEntry,
  type DeadLetterFilter,
  type DeadLetterListResponse,
  type DeadLetterPurgeResponse,
  type DeadLetterReplayResponse,
  type DeadLetterReplayResult,
} from '../protocol/dead-letter.types.js';
import { KeySpace } from '../protocol/key-space.js';
import { runScript } from '../redis/lua-script.js';
import type { RedisConnection } from '../redis/redis-connection.types.js';
import {
  checkDeadLetterFilter,
  checkDeadLetterId,
  checkDeadLetterStream,
  matchesDeadLetterFilter,
  parseDeadLetterEntry,
  parseReplayMark,
} from './dead-letter-entry.js';
import {
  DLQ_CLAIM_SCRIPT,
  DLQ_FINISH_SCRIPT,
  DLQ_PURGE_ALL_SCRIPT,
  DLQ_PURGE_SCRIPT,
} from './dead-letter.scripts.js';

/**
 * Options of a {@link DeadLetterService}.
 */
export interface DeadLetterServiceOptions {
  /** A command connection to the Redis of the stream (`createRedisConnection(options, 'command')`). */
  connection: RedisConnection;
  /** The `KEY_PREFIX` of the coordinator. */
  keyPrefix: string;
  /** Routing metadata for replays (a {@link CoordinatorClient} in a program). */
  routing: RoutingSource;
  /**
   * How long a replay's claim on an entry holds before another replay may take it over (it
   * crashed between publishing and marking, so the entry may be published twice). Default 60 s.
   */
  claimLeaseMs?: number;
}

/**
 * Which dead-letter entries a replay or purge takes: listed ids (at most 1000), or every entry
 * that passes a filter (at most `limit`, default 1000). A purge may also take `{ all: true }`.
 */
export type DeadLetterSelection =
  { ids: readonly string[] } | { filter: DeadLetterFilter; limit?: number };

/** Entries read per `XRANGE`. */
const PAGE = 200;
/** Entries one list call reads at most (the filters run over them); `nextCursor` continues. */
const SCAN_BUDGET = 10_000;
/** Most ids one replay or purge takes. */
const MAX_IDS = 1000;
/** Most entries one filtered replay or purge takes. */
const MAX_SELECTED = 10_000;

/** Payloads are re-published as the bytes they were. */
const RAW_PAYLOAD: PayloadSerializer = {
  serialize: (payload) => payload as Buffer,
  deserialize: (raw) => raw,
};

/**
 * Finds, inspects, replays and purges the dead letters of a stream (docs/protocol.md §16). The
 * coordinator's admin API and `rsc dlq` use it; a program can too.
 *
 * A replay re-publishes the entry by its key through the current routing (the same same-slot
 * script producers use, so a closed shard is refused and the routing re-fetched), with its
 * headers plus `rsc-replay-of: <dead-letter id>`, and marks the entry replayed. The claim that
 * precedes the publish makes concurrent replays publish an entry once; a replay that crashes
 * after publishing and before marking leaves a claim that is taken over after `claimLeaseMs`, so
 * the guarantee is at-least-once (consumers can deduplicate on the header).
 */
export class DeadLetterService {
  private readonly connection: RedisConnection;
  private readonly keys: KeySpace;
  private readonly publisher: StreamPublisher;
  private readonly routing: RoutingCache;
  private readonly claimLeaseMs: number;

  constructor(options: DeadLetterServiceOptions) {
    this.connection = options.connection;
    this.keys = new KeySpace(options.keyPrefix);
    this.claimLeaseMs = options.claimLeaseMs ?? 60_000;
    if (!Number.isSafeInteger(this.claimLeaseMs) || this.claimLeaseMs < 1) {
      throw new DeadLetterArgumentError(
        `claimLeaseMs must be a positive integer, got ${String(options.claimLeaseMs)}`,
      );
    }
    this.routing = new RoutingCache(options.routing);
    this.publisher = new StreamPublisher({
      connection: options.connection,
      routing: this.routing,
      serializer: RAW_PAYLOAD,
    });
  }

  /** The dead-letter stream key of `stream`. */
  deadLetterKey(stream: string): string {
    return this.keys.deadLetterKey(checkDeadLetterStream(stream));
  }

  /**
   * The entries of `stream`'s dead-letter stream that pass `filter`, oldest first: at most
   * `limit` (1-1000, default 100), after the entry id `after` (exclusive). One call reads at most
   * 10 000 entries; `nextCursor` continues where it stopped.
   *
   * @throws DeadLetterArgumentError for a bad stream, filter, cursor or limit.
   */
  async list(
    stream: string,
    filter: DeadLetterFilter = {},
    page: { after?: string; limit?: number } = {},
  ): Promise<DeadLetterListResponse> {
    const key = this.deadLetterKey(stream);
    checkDeadLetterFilter(filter);
    const limit = page.limit ?? 100;
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > 1000) {
      throw new DeadLetterArgumentError(
        `limit must be an integer between 1 and 1000, got ${String(limit)}`,
      );
    }
    const after = page.after === undefined ? undefined : checkDeadLetterId(page.after);
    // From the cursor, or from `fromMs` when the cursor lies before it.
    let start =
      after !== undefined &&
      (filter.fromMs === undefined || Number(after.slice(0, after.indexOf('-'))) >= filter.fromMs)
        ? `(${after}`
        : filter.fromMs !== undefined
          ? `${filter.fromMs}-0`
          : '-';
    const end = filter.toMs !== undefined ? `${filter.toMs}` : '+';
    const entries: DeadLetterEntry[] = [];
    let scanned = 0;
    let lastId: string | null = null;
    let exhausted = false;
    // Stops at the end of the stream, on the limit or on the budget (then more may follow).
    while (entries.length < limit && scanned < SCAN_BUDGET) {
      const count = Math.min(PAGE, SCAN_BUDGET - scanned);
      const raw = (await this.connection.xrangeBuffer(key, start, end, 'COUNT', count)) as Array<
        [Buffer, Buffer[]]
      >;
      const marks = await this.marks(
        stream,
        raw.map(([id]) => id.toString()),
      );
      let consumed = 0;
      for (const [idBytes, fields] of raw) {
        const id = idBytes.toString();
        scanned++;
        consumed++;
        lastId = id;
        const entry = parseDeadLetterEntry(stream, id, fields, marks[consumed - 1] ?? null);
        if (matchesDeadLetterFilter(entry, filter)) entries.push(entry);
        if (entries.length >= limit) break;
      }
      if (raw.length < count && consumed === raw.length) {
        exhausted = true;
        break;
      }
      start = `(${lastId as string}`;
    }
    return {
      stream,
      deadLetterKey: key,
      entries,
      nextCursor: exhausted ? null : lastId,
      scanned,
    };
  }

  /**
   * One dead-letter entry, or `null` when there is none with that id.
   *
   * @throws DeadLetterArgumentError for a bad stream or id.
   */
  async get(stream: string, id: string): Promise<DeadLetterEntry | null> {
    const key = this.deadLetterKey(stream);
    checkDeadLetterId(id);
    const raw = (await this.connection.xrangeBuffer(key, id, id)) as Array<[Buffer, Buffer[]]>;
    const found = raw[0];
    if (found === undefined) return null;
    const [mark] = await this.marks(stream, [id]);
    return parseDeadLetterEntry(stream, id, found[1], mark ?? null);
  }

  /**
   * Re-publishes the selected entries by key through the current routing, one after another in
   * the order selected (a filter selects oldest first and skips entries already replayed), each
   * at most once (see the class). A failed publish is reported in its result and the replay goes
   * on with the next entry.
   *
   * @throws DeadLetterArgumentError for a bad stream or selection (nothing is replayed).
   */
  async replay(stream: string, selection: DeadLetterSelection): Promise<DeadLetterReplayResponse> {
    const dlqKey = this.deadLetterKey(stream);
    const replaysKey = this.keys.deadLetterReplaysKey(stream);
    const ids =
      'ids' in selection
        ? checkIds(selection.ids)
        : await this.select(stream, { ...selection.filter, replayed: false }, selection.limit);
    const results: DeadLetterReplayResult[] = [];
    for (const id of ids) {
      results.push(await this.replayOne(stream, dlqKey, replaysKey, id));
    }
    return {
      stream,
      results,
      replayed: results.filter((r) => r.outcome === 'replayed').length,
    };
  }

  /**
   * Deletes the selected entries (and their replay marks), or with `{ all: true }` the whole
   * dead-letter stream. `confirm` must be `true`.
   *
   * @throws DeadLetterArgumentError without confirmation or for a bad stream or selection
   *   (nothing is deleted).
   */
  async purge(
    stream: string,
    selection: DeadLetterSelection | { all: true },
    options: { confirm: boolean },
  ): Promise<DeadLetterPurgeResponse> {
    const dlqKey = this.deadLetterKey(stream);
    const replaysKey = this.keys.deadLetterReplaysKey(stream);
    if (options?.confirm !== true) {
      throw new DeadLetterArgumentError(
        'purge deletes dead letters for good: confirm it (confirm: true; rsc dlq purge --yes)',
      );
    }
    if ('all' in selection) {
      if (selection.all !== true) throw new DeadLetterArgumentError('"all" must be true');
      const deleted = Number(
        await runScript(this.connection, DLQ_PURGE_ALL_SCRIPT, [dlqKey, replaysKey]),
      );
      return { stream, deleted };
    }
    const ids =
      'ids' in selection
        ? checkIds(selection.ids)
        : await this.select(stream, selection.filter, selection.limit);
    let deleted = 0;
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      deleted += Number(
        await runScript(this.connection, DLQ_PURGE_SCRIPT, [dlqKey, replaysKey, ...chunk]),
      );
    }
    return { stream, deleted };
  }

  private async replayOne(
    stream: string,
    dlqKey: string,
    replaysKey: string,
    id: string,
  ): Promise<DeadLetterReplayResult> {
    const token = randomUUID();
    const [outcome, markText] = (await runScript(this.connection, DLQ_CLAIM_SCRIPT, [
      dlqKey,
      replaysKey,
      id,
      token,
      this.claimLeaseMs,
    ])) as [string, string];
    if (outcome === 'missing') return { id, outcome: 'not-found' };
    if (outcome === 'done') {
      const mark = parseReplayMark(markText);
      return {
        id,
        outcome: 'already-replayed',
        ...(mark?.entryId !== undefined ? { entryId: mark.entryId } : {}),
        ...(mark?.shardKey !== undefined ? { shardKey: mark.shardKey } : {}),
      };
    }
    if (outcome === 'busy') return { id, outcome: 'in-progress' };
    const release = () =>
      runScript(this.connection, DLQ_FINISH_SCRIPT, [replaysKey, id, token, 'release']);
    try {
      const entry = await this.get(stream, id);
      if (entry === null) {
        await release();
        return { id, outcome: 'not-found' };
      }
      if (entry.key === null || entry.payloadBase64 === null) {
        await release();
        return {
          id,
          outcome: 'not-replayable',
          message: `the entry has no ${entry.key === null ? 'key' : 'payload'}`,
        };
      }
      const entryId = await this.publisher.publish(
        stream,
        entry.key,
        Buffer.from(entry.payloadBase64, 'base64'),
        { headers: { ...entry.headers, [REPLAY_OF_HEADER]: id } },
      );
      const routing = this.routingShardKey(stream, entry.key);
      await runScript(this.connection, DLQ_FINISH_SCRIPT, [
        replaysKey,
        id,
        token,
        'done',
        entryId,
        routing,
      ]);
      return { id, outcome: 'replayed', entryId, ...(routing ? { shardKey: routing } : {}) };
    } catch (error) {
      await release().catch(() => undefined);
      return {
        id,
        outcome: 'failed',
        message: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
      };
    }
  }

  /** The shard key the routing of the last publish sends `key` to, or `''` if unknown. */
  private routingShardKey(stream: string, key: string): string {
    return this.routing.peek(stream)?.shardKeyFor(key) ?? '';
  }

  /** The replay marks of `ids` (in order). */
  private async marks(stream: string, ids: readonly string[]) {
    if (ids.length === 0) return [];
    const values = await this.connection.hmget(this.keys.deadLetterReplaysKey(stream), ...ids);
    return values.map((v) => parseReplayMark(v));
  }

  /** The ids of every entry that passes `filter`, oldest first, at most `limit`. */
  private async select(stream: string, filter: DeadLetterFilter, limit = 1000): Promise<string[]> {
    if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SELECTED) {
      throw new DeadLetterArgumentError(
        `limit must be an integer between 1 and ${MAX_SELECTED}, got ${String(limit)}`,
      );
    }
    const ids: string[] = [];
    let after: string | undefined;
    for (;;) {
      const page = await this.list(stream, filter, {
        limit: Math.min(1000, limit - ids.length),
        ...(after !== undefined ? { after } : {}),
      });
      ids.push(...page.entries.map((e) => e.id));
      if (page.nextCursor === null || ids.length >= limit) return ids;
      after = page.nextCursor;
    }
  }
}

function checkIds(ids: readonly string[]): string[] {
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > MAX_IDS) {
    throw new DeadLetterArgumentError(`ids must be a list of 1-${MAX_IDS} dead-letter entry ids`);
  }
  const unique = [...new Set(ids.map((id) => checkDeadLetterId(id)))];
  return unique;
}
