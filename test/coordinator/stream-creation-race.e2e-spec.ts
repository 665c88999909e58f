import type { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  KeySpace,
  routingFunctionFor,
  shardMetaKey,
  type StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import {
  beginReshard,
  withNextVersion,
} from '../../apps/coordinator/src/core/streams/reshard-steps.js';
import type { StreamRecord } from '../../apps/coordinator/src/core/streams/stream-record.js';
import {
  openShardMeta,
  ShardDataPlane,
  withdrawnEntriesKey,
  withdrawShard,
} from '../../apps/coordinator/src/store/shard-data-plane.js';
import { StreamRegistry } from '../../apps/coordinator/src/store/stream-registry.js';
import { ABANDONED_AFTER_MS } from '../../apps/coordinator/src/store/unwritten-shard-settler.js';
import { CompiledRouting } from '../../libs/stream-coordinator/src/producer/compiled-routing.js';
import { RoutingCache } from '../../libs/stream-coordinator/src/producer/routing-cache.js';
import { StreamPublisher } from '../../libs/stream-coordinator/src/producer/stream-publisher.js';
import { cleanupPrefix, createTestRedis, uniquePrefix } from '../support/redis.js';

/**
 * A replica with two hooks: `afterRefresh` runs once after its next catalog load (another replica
 * writing between this one's look and its opens), `beforeWrite` once before its next catalog
 * write (another replica writing between this one's opens and its compare-and-set).
 */
class Interleaved extends StreamRegistry {
  afterRefresh: (() => Promise<unknown>) | null = null;
  beforeWrite: (() => Promise<unknown>) | null = null;
  /**
   * While set, every write waits until this many writes are waiting, then they all fail (attempts
   * in flight at once, Redis resetting the connection under them).
   */
  failWritesTogether = 0;
  private waitingWrites: Array<() => void> = [];
  readonly errors: string[] = [];
  constructor(raw: Redis, keys: KeySpace) {
    super(raw, keys, { error: (m) => void this.errors.push(m) });
  }
  /** Runs once after its next read of one stored record (a settle's look at the catalog). */
  afterRecordRead: (() => Promise<unknown>) | null = null;
  override async refresh(): Promise<void> {
    await super.refresh();
    const after = this.afterRefresh;
    this.afterRefresh = null;
    if (after) await after();
  }
  protected override async storedRecord(stream: string): Promise<StreamRecord | undefined> {
    const record = await super.storedRecord(stream);
    const after = this.afterRecordRead;
    this.afterRecordRead = null;
    if (after) await after();
    return record;
  }
  override async write(...args: Parameters<StreamRegistry['write']>): Promise<boolean> {
    const before = this.beforeWrite;
    this.beforeWrite = null;
    if (before) await before();
    if (this.failWritesTogether > 0) {
      await new Promise<void>((resolve) => {
        this.waitingWrites.push(resolve);
        if (this.waitingWrites.length === this.failWritesTogether) {
          for (const release of this.waitingWrites.splice(0)) release();
        }
      });
      throw new Error('connection reset (test)');
    }
    return super.write(...args);
  }
}

const LOST_IDS = [...Array(16).keys()].map((i) => i + 8);

/** What a replica remembers of `orders` after an 8 → 16 reshard (active shards 8…23). */
function lostRecord(now: number): StreamRecord {
  return {
    stream: 'orders',
    version: 7,
    routingEpoch: 2,
    nextShardId: 24,
    shards: LOST_IDS.map((id) => ({ id, state: 'active', parents: [], createdAt: now })),
    routing: routingFunctionFor(LOST_IDS),
    resharding: null,
    createdAt: now,
  };
}

/**
 * Two replicas write a stream's record at once after Redis lost its data: one restores what it
 * remembers (docs/protocol.md §13.6), the other creates the stream from `STREAMS` (it started
 * after the loss), or two restore from different memories. Each opens its shards for producers
 * before its compare-and-set write. The loser must not leave shards open that the winner's
 * record does not name: a producer still holding the lost routing would write into one, and no
 * member would ever read it (found by reading the restore path; no run had shown it).
 */
describe('a stream record written by two replicas at once', () => {
  let raw: Redis;
  let prefix: string;
  let keys: KeySpace;
  beforeAll(() => {
    raw = createTestRedis();
  });
  afterEach(async () => {
    await cleanupPrefix(raw, prefix);
  });
  afterAll(() => {
    raw.disconnect();
  });

  function replicas(): { first: Interleaved; other: StreamRegistry } {
    prefix = uniquePrefix('creation-race');
    keys = new KeySpace(prefix);
    return { first: new Interleaved(raw, keys), other: new StreamRegistry(raw, keys) };
  }

  /** `other` starts an 8 → 16 reshard of its `orders` record: `preparing`, new shards 8…23. */
  async function beginReshardOf(other: StreamRegistry, now: number): Promise<void> {
    await other.refresh();
    const record = other.get('orders')!;
    const begun = beginReshard(record, { shards: 16, mode: 'strict' }, 1024, now);
    if (begun.kind !== 'started') throw new Error('the reshard did not start');
    expect(begun.record.resharding?.toShards).toEqual(LOST_IDS);
    expect(await other.write(withNextVersion(record, begun.record), record.version, [])).toBe(true);
  }

  /**
   * `other` creates `orders` with 8 shards and begins an 8 → 16 reshard; with `opened`, the
   * reshard's preparing step has also opened (taken over) its new shards 8…23.
   */
  async function createThenReshard(
    other: StreamRegistry,
    now: number,
    { opened }: { readonly opened: boolean },
  ): Promise<void> {
    await other.create('orders', 8, now);
    await beginReshardOf(other, now);
    if (opened) expect(await new ShardDataPlane(raw, keys).open('orders', LOST_IDS)).toEqual([]);
  }

  async function field(id: number, name: string): Promise<string | null> {
    return raw.hget(shardMetaKey(keys.shardKey('orders', id)), name);
  }

  async function states(ids: readonly number[]): Promise<Array<string | null>> {
    return Promise.all(
      ids.map((id) => raw.hget(shardMetaKey(keys.shardKey('orders', id)), 'state')),
    );
  }

  it('a restore that loses to a creation leaves none of its shards open', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => other.create('orders', 8, now);
    const kept = await first.restore(lostRecord(now), now);
    expect(kept.routingEpoch).toBe(1);
    expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill('open'));
    expect(await states(LOST_IDS)).toEqual(Array(16).fill(null));
    const origins = await Promise.all(
      LOST_IDS.map((id) => raw.hget(shardMetaKey(keys.shardKey('orders', id)), 'origin')),
    );
    expect(origins).toEqual(Array(16).fill(null));
  });

  it('a producer holding the lost routing then writes where the kept record routes the key', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => other.create('orders', 8, now);
    const lost = lostRecord(now);
    const kept = await first.restore(lost, now);
    const answers: StreamRouting[] = [other.routing(lost), other.routing(kept)];
    const publisher = new StreamPublisher({
      connection: raw,
      routing: new RoutingCache({
        fetchRouting: () => Promise.resolve(answers.length > 1 ? answers.shift()! : answers[0]!),
      }),
      retryDelayMs: 0,
    });
    const key = 'customer-17';
    const id = await publisher.publish('orders', key, { n: 1 });
    const shard = new CompiledRouting(other.routing(kept)).shardFor(key);
    const written = await raw.xrange(keys.shardKey('orders', shard), id, id);
    expect(written).toHaveLength(1);
    expect(answers).toHaveLength(1); // it refreshed: the lost routing's shard refused the write
  });

  it('a creation that loses to a restore leaves none of its shards open', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => other.restore(lostRecord(now), now);
    const result = await first.create('orders', 8, now);
    expect(result.status).toBe('conflict');
    expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill(null));
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
  });

  it('two creations of the same layout keep every shard open', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => other.create('orders', 8, now);
    expect((await first.create('orders', 8, now)).status).toBe('exists');
    expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill('open'));
  });

  it('a reshard that opens the same ids after the loser did keeps them (it takes them over)', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => createThenReshard(other, now, { opened: true });
    await first.restore(lostRecord(now), now);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
    expect(await Promise.all(LOST_IDS.map((id) => field(id, 'origin')))).toEqual(
      Array(16).fill('reshard'),
    );
  });

  it('a reshard that names the ids but has not opened them yet gets them withdrawn, then opens them', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    // the loser looks (no record), then the other replica creates and begins a reshard whose
    // preparing step has not opened its shards yet; the loser opens them, loses, and withdraws
    // them (what stale producers wrote meanwhile must not reach the reshard's new shards)
    first.afterRefresh = () => createThenReshard(other, now, { opened: false });
    await first.restore(lostRecord(now), now);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill(null));
    expect(await new ShardDataPlane(raw, keys).open('orders', LOST_IDS)).toEqual([]);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
    expect(await Promise.all(LOST_IDS.map((id) => field(id, 'opener')))).toEqual(
      Array(16).fill('reshard'),
    );
  });

  it('a reshard that opened the ids before the loser did keeps them and their origin', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.afterRefresh = () => createThenReshard(other, now, { opened: true });
    await first.restore(lostRecord(now), now);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
    expect(await Promise.all(LOST_IDS.map((id) => field(id, 'opener')))).toEqual(
      Array(16).fill('reshard'),
    );
    // not `restored`: the reshard's completion clears `reshard` only (docs/protocol.md §12.3)
    expect(await Promise.all(LOST_IDS.map((id) => field(id, 'origin')))).toEqual(
      Array(16).fill('reshard'),
    );
  });

  it('a shard the winner opened first stays the winner’s, whatever the loser writes', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    // the loser looks, the other replica creates 0…7, then the loser restores a 4-shard layout
    const lost4: StreamRecord = {
      ...lostRecord(now),
      nextShardId: 4,
      shards: [0, 1, 2, 3].map((id) => ({ id, state: 'active', parents: [], createdAt: now })),
      routing: routingFunctionFor([0, 1, 2, 3]),
    };
    const openersOf = () => Promise.all([0, 1, 2, 3].map((id) => field(id, 'opener')));
    let winners: Array<string | null> = [];
    first.afterRefresh = async () => {
      await other.create('orders', 8, now);
      winners = await openersOf();
    };
    expect((await first.restore(lost4, now)).routingEpoch).toBe(1);
    expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill('open'));
    expect(new Set(winners).size).toBe(1);
    expect(await openersOf()).toEqual(winners);
  });

  it('a write that fails before any record is stored leaves its shards open and says so', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => Promise.reject(new Error('connection reset (test)'));
    await expect(first.create('orders', 8, now)).rejects.toThrow('connection reset (test)');
    expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill('open'));
    expect(first.errors).toHaveLength(1);
    expect(first.errors[0]).toContain('none is stored yet');
    // the other replica's creation borrows them (open already) and names them: they stay open
    await other.create('orders', 8, now);
    await first.settleUnwritten(Date.now());
    expect(other.get('orders')?.shards.map((s) => s.id)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill('open'));
    expect(first.errors).toHaveLength(1);
  });

  it('shards of a write that failed are taken back once another replica’s record is stored', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => Promise.reject(new Error('connection reset (test)'));
    await expect(first.restore(lostRecord(now), now)).rejects.toThrow('connection reset (test)');
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open')); // no record yet: kept
    await first.settleUnwritten(Date.now()); // (still none: kept, said once)
    expect(first.errors).toHaveLength(1);
    await other.create('orders', 8, now);
    await first.settleUnwritten(Date.now()); // the data-loss watcher's next check
    expect(await states(LOST_IDS)).toEqual(Array(16).fill(null));
    expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill('open'));
    expect(first.errors).toHaveLength(1);
  });

  it('the shards of a failed attempt are taken back with those of a later lost one', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => Promise.reject(new Error('connection reset (test)'));
    await expect(first.create('orders', 4, now)).rejects.toThrow('connection reset (test)');
    // the second attempt restores another layout (8…23) and loses to a 2-shard creation
    first.beforeWrite = () => other.create('orders', 2, now);
    await first.restore(lostRecord(now), now);
    expect(await states([0, 1])).toEqual(['open', 'open']);
    expect(await states([2, 3, ...LOST_IDS])).toEqual(Array(18).fill(null));
  });

  it('two attempts at once that both fail are both taken back, each with its own opener', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    const lost4: StreamRecord = {
      ...lostRecord(now),
      nextShardId: 4,
      shards: [0, 1, 2, 3].map((id) => ({ id, state: 'active', parents: [], createdAt: now })),
      routing: routingFunctionFor([0, 1, 2, 3]),
    };
    first.failWritesTogether = 3; // all have opened their shards before any fails
    const results = await Promise.allSettled([
      first.create('orders', 8, now),
      first.restore(lost4, now),
      first.restore(lostRecord(now), now),
    ]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'rejected', 'rejected']);
    first.failWritesTogether = 0;
    expect(first.errors).toHaveLength(1); // the wait, once
    await other.create('orders', 2, now);
    await first.settleUnwritten(Date.now());
    expect(await states([0, 1])).toEqual(['open', 'open']);
    expect(await states([2, 3, 4, 5, 6, 7, ...LOST_IDS])).toEqual(Array(22).fill(null));
    expect(first.errors).toHaveLength(1);
  });

  it('a withdrawal that fails is tried again at the next check, and said', async () => {
    const { other } = replicas();
    const own = createTestRedis(); // this replica's connection, closed under its withdrawals
    const first = new Interleaved(own, keys);
    try {
      const now = Date.now();
      first.beforeWrite = () => Promise.reject(new Error('connection reset (test)'));
      await expect(first.restore(lostRecord(now), now)).rejects.toThrow('connection reset (test)');
      await other.create('orders', 8, now);
      // the check finds the record, then Redis goes away before the withdrawals reach it
      first.afterRecordRead = () => Promise.resolve(own.disconnect());
      await first.settleUnwritten(Date.now());
      expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
      // the wait, the failed withdrawal, and the look for what other replicas left
      expect(first.errors).toHaveLength(3);
      expect(first.errors[2]).toContain(
        'could not look for shards that stopped replicas left open',
      );
      expect(first.errors[1]).toContain(
        `could not withdraw shards ${LOST_IDS.join(', ')} of orders`,
      );
      await own.connect();
      await first.settleUnwritten(Date.now()); // the data-loss watcher's next check
      expect(await states(LOST_IDS)).toEqual(Array(16).fill(null));
      expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill('open'));
      expect(first.errors).toHaveLength(3);
      await first.settleUnwritten(Date.now()); // nothing left: no command, no log
      expect(first.errors).toHaveLength(3);
    } finally {
      own.disconnect();
    }
  });

  it('what a replica that stopped before its write opened is taken back by another, once its note stays unchanged', async () => {
    const { first } = replicas();
    const now = Date.now();
    // its write fails and it stops there: what it remembered in memory is gone with it
    first.beforeWrite = () => Promise.reject(new Error('the replica stops (test)'));
    await expect(first.restore(lostRecord(now), now)).rejects.toThrow('the replica stops (test)');
    const survivor = new Interleaved(raw, keys);
    await survivor.settleUnwritten(now); // first sight of the note
    await survivor.settleUnwritten(now + ABANDONED_AFTER_MS); // unchanged, but no record yet
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
    await survivor.create('orders', 8, now);
    expect(Object.keys(await raw.hgetall(keys.unwrittenShardsKey()))).toHaveLength(1);
    // a replica seeing it for the first time waits, however old the note is
    const late = new Interleaved(raw, keys);
    await late.settleUnwritten(now + 5 * ABANDONED_AFTER_MS);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
    expect([...survivor.errors, ...late.errors]).toEqual([]);
    await survivor.settleUnwritten(now + ABANDONED_AFTER_MS + 1000);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill(null));
    expect(await states([0, 1, 2, 3, 4, 5, 6, 7])).toEqual(Array(8).fill('open'));
    expect(survivor.errors).toHaveLength(1);
    expect(survivor.errors[0]).toContain(`took back shards ${LOST_IDS.join(', ')} of orders`);
    expect(await raw.exists(keys.unwrittenShardsKey())).toBe(0);
    await survivor.settleUnwritten(now + 2 * ABANDONED_AFTER_MS);
    expect(survivor.errors).toHaveLength(1);
  });

  it('a replica still waiting for a record vouches for its note: no other replica takes it back', async () => {
    const { first } = replicas();
    const other = new Interleaved(raw, keys);
    const now = Date.now();
    first.beforeWrite = () => Promise.reject(new Error('connection reset (test)'));
    await expect(first.restore(lostRecord(now), now)).rejects.toThrow('connection reset (test)');
    await other.settleUnwritten(now + 10_000); // other's first sight
    await first.settleUnwritten(now + 50_000); // its check: still no record, vouches
    await other.create('orders', 8, now + 60_000);
    await other.settleUnwritten(now + 70_000); // 60 s after its first sight, but vouched since
    expect(other.errors).toEqual([]);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
    await first.settleUnwritten(now + 75_000); // its own check takes them back
    expect(await states(LOST_IDS)).toEqual(Array(16).fill(null));
    expect(await raw.exists(keys.unwrittenShardsKey())).toBe(0);
  });

  it('a note whose shards are not open yet is kept a while for an open still in flight', async () => {
    const { other } = replicas();
    const now = Date.now();
    await other.create('orders', 8, now);
    // a replica noted shard 30 and went quiet before its open reached Redis
    await raw.hset(
      keys.unwrittenShardsKey(),
      'slow',
      JSON.stringify({ stream: 'orders', ids: [30], at: now }),
    );
    const sweeper = new Interleaved(raw, keys);
    await sweeper.settleUnwritten(now);
    await sweeper.settleUnwritten(now + ABANDONED_AFTER_MS);
    expect(await raw.hexists(keys.unwrittenShardsKey(), 'slow')).toBe(1);
    const shard30 = keys.shardKey('orders', 30);
    expect(await openShardMeta(raw, shard30, { id: 'slow', takeOver: false })).toBe('opened');
    await sweeper.settleUnwritten(now + 2 * ABANDONED_AFTER_MS);
    expect(await field(30, 'state')).toBeNull();
    expect(sweeper.errors).toHaveLength(1);
    expect(sweeper.errors[0]).toContain('took back shards 30 of orders');
    // one that never lands: the note goes after a longer while, silently
    await raw.hset(
      keys.unwrittenShardsKey(),
      'lost',
      JSON.stringify({ stream: 'orders', ids: [31], at: now }),
    );
    await sweeper.settleUnwritten(now);
    await sweeper.settleUnwritten(now + 9 * ABANDONED_AFTER_MS);
    expect(await raw.hexists(keys.unwrittenShardsKey(), 'lost')).toBe(1);
    await sweeper.settleUnwritten(now + 10 * ABANDONED_AFTER_MS);
    expect(await raw.exists(keys.unwrittenShardsKey())).toBe(0);
    expect(sweeper.errors).toHaveLength(1);
  });

  it('two replicas taking back one stopped replica’s shards at once report each shard once', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => Promise.reject(new Error('the replica stops (test)'));
    await expect(first.restore(lostRecord(now), now)).rejects.toThrow('the replica stops (test)');
    await other.create('orders', 8, now);
    const shard11 = keys.shardKey('orders', 11);
    await raw.xadd(shard11, '*', 'key', 'customer-3', 'payload', '{"n":1}'); // a stale producer
    const sweepers = [new Interleaved(raw, keys), new Interleaved(raw, keys)];
    for (const sweeper of sweepers) await sweeper.settleUnwritten(now); // first sight
    await Promise.all(sweepers.map((r) => r.settleUnwritten(now + ABANDONED_AFTER_MS)));
    const errors = sweepers.flatMap((r) => r.errors);
    const taken = errors
      .map((e) => /^took back shards ([\d, ]+) of orders/.exec(e)?.[1])
      .filter((ids): ids is string => ids !== undefined)
      .flatMap((ids) => ids.split(', ').map(Number));
    expect(taken.sort((a, b) => a - b)).toEqual(LOST_IDS);
    expect(errors.filter((e) => e.includes('held entries'))).toHaveLength(1);
    expect(await raw.xlen((await raw.keys(`${shard11}:withdrawn:*`))[0]!)).toBe(1);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill(null));
  });

  it('a stopped replica’s shards that a reshard step took over stay open, and its note goes', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => Promise.reject(new Error('the replica stops (test)'));
    await expect(first.restore(lostRecord(now), now)).rejects.toThrow('the replica stops (test)');
    await createThenReshard(other, now, { opened: true }); // new shards 8…23, taken over
    const survivor = new Interleaved(raw, keys);
    await survivor.settleUnwritten(now);
    await survivor.settleUnwritten(now + ABANDONED_AFTER_MS);
    expect(await states(LOST_IDS)).toEqual(Array(16).fill('open'));
    expect(survivor.errors).toEqual([]);
    expect(await raw.exists(keys.unwrittenShardsKey())).toBe(0);
  });

  it('a note it cannot read is said once and left as it is', async () => {
    replicas();
    const survivor = new Interleaved(raw, keys);
    await raw.hset(keys.unwrittenShardsKey(), 'not-a-note', '{"stream":1}');
    await survivor.settleUnwritten(Date.now());
    await survivor.settleUnwritten(Date.now() + ABANDONED_AFTER_MS);
    expect(survivor.errors).toHaveLength(1);
    expect(survivor.errors[0]).toContain('cannot read (not-a-note)');
    expect(await raw.hget(keys.unwrittenShardsKey(), 'not-a-note')).toBe('{"stream":1}');
  });

  it('leaves no entry behind once a record is written or a loser has settled', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    first.beforeWrite = () => other.create('orders', 8, now);
    await first.restore(lostRecord(now), now); // loses, withdraws its shards at once
    expect(await raw.exists(keys.unwrittenShardsKey())).toBe(0);
    // a failed write keeps its entry until its own replica settles it
    first.beforeWrite = () => Promise.reject(new Error('connection reset (test)'));
    await expect(first.create('audit', 2, now)).rejects.toThrow('connection reset (test)');
    expect(Object.keys(await raw.hgetall(keys.unwrittenShardsKey()))).toHaveLength(1);
    await other.create('audit', 2, now);
    await first.settleUnwritten(now);
    expect(await raw.exists(keys.unwrittenShardsKey())).toBe(0);
  });

  it('a withdrawal repeated after a lost reply still reports where the stream went', async () => {
    replicas();
    const shard5 = keys.shardKey('orders', 5);
    expect(await openShardMeta(raw, shard5, { id: 'x', takeOver: false })).toBe('opened');
    expect(await openShardMeta(raw, shard5, { id: 'y', takeOver: false })).toBe('open');
    await raw.xadd(shard5, '*', 'key', 'k', 'payload', '1');
    expect(await withdrawShard(raw, shard5, 'y')).toBe('kept');
    expect(await withdrawShard(raw, shard5, 'x')).toBe('stream-moved');
    expect(await withdrawShard(raw, shard5, 'x')).toBe('moved-before');
    expect(await raw.xlen(withdrawnEntriesKey(shard5, 'x'))).toBe(1);
    expect(await withdrawShard(raw, shard5, 'y')).toBe('not-open');
  });

  it('a restore does not mark a shard whose stream already has consumer groups as restored', async () => {
    const { first } = replicas();
    const now = Date.now();
    // an eviction of shard 8's meta hash alone: its stream and its consumer group survive
    await raw.xgroup('CREATE', keys.shardKey('orders', 8), 'shop', '$', 'MKSTREAM');
    await first.restore(lostRecord(now), now);
    expect(await field(8, 'state')).toBe('open');
    expect(await field(8, 'origin')).toBeNull();
    expect(await field(9, 'origin')).toBe('restored');
  });

  it('a withdrawn shard whose stream has consumer groups is moved aside, not deleted', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    const shard9 = keys.shardKey('orders', 9);
    first.beforeWrite = async () => {
      await other.create('orders', 8, now);
      await raw.xgroup('CREATE', shard9, 'shop', '0', 'MKSTREAM');
    };
    await first.restore(lostRecord(now), now);
    expect(await raw.exists(shard9)).toBe(0);
    const moved = await raw.keys(`${shard9}:withdrawn:*`);
    expect(moved).toHaveLength(1);
    expect(await raw.xinfo('GROUPS', moved[0]!)).toHaveLength(1);
    expect(first.errors.join('\n')).toContain(moved[0]!);
  });

  it('what a stale producer wrote to a shard before it was withdrawn is moved aside, and said', async () => {
    const { first, other } = replicas();
    const now = Date.now();
    const shard11 = keys.shardKey('orders', 11);
    first.beforeWrite = async () => {
      await other.create('orders', 8, now);
      await raw.xadd(shard11, '*', 'key', 'customer-3', 'payload', '{"n":1}');
    };
    await first.restore(lostRecord(now), now);
    expect(await raw.exists(shard11)).toBe(0);
    const aside = (await raw.keys(`${shard11}:withdrawn:*`))[0]!;
    expect(aside).toBe(withdrawnEntriesKey(shard11, aside.slice(`${shard11}:withdrawn:`.length)));
    expect(await raw.xlen(aside)).toBe(1);
    expect(first.errors).toHaveLength(1);
    expect(first.errors[0]).toContain(aside);
  });
});
