import type { Cluster, Redis } from 'ioredis';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import type { StreamRecord } from '../core/streams/stream-record.js';
import { withdrawnEntriesKey, withdrawShard } from './shard-data-plane.js';
import { type UnwrittenNote, UnwrittenShardNotes } from './unwritten-shard-notes.js';

/** Where what could not be repaired is reported (Nest's `Logger` fits). */
export interface ErrorLog {
  error(message: string): void;
}

/**
 * How long a replica must see a note unchanged (its replica vouches for it at each of its checks,
 * every heartbeat interval, at most 10 s) before it takes the note's shards back: the replica that
 * wrote it stopped, or has not reached Redis for that long.
 */
export const ABANDONED_AFTER_MS = 60_000;

/**
 * How long a note whose shards are not open (yet) is kept: an open sent before its replica went
 * quiet may still land late (a command resent after a reconnect).
 */
const UNOPENED_KEPT_MS = 10 * ABANDONED_AFTER_MS;

/**
 * Takes back the shards that stream creations and restores opened for a record they did not
 * write (docs/protocol.md §13.6). An attempt notes its shards durably before it opens them
 * ({@link opening}); when its record is written the note goes ({@link done}); when it is not,
 * its shards wait here until a record is stored, and those the record does not name as shards
 * are withdrawn ({@link settle}). A note whose replica stopped meanwhile, and so no longer vouches
 * for it, is settled by any replica ({@link settleAll}).
 */
export class UnwrittenShardSettler {
  /**
   * Per stream, the shards this replica's attempts may have opened and not withdrawn yet, each
   * with the openers that may have opened it; `announced`: how many the last log of the wait named.
   */
  private readonly pending = new Map<
    string,
    { shards: Map<number, Set<string>>; announced: number }
  >();
  /** This replica's notes still in Redis (attempts running, or waiting here), by opener. */
  private readonly own = new Map<string, UnwrittenNote>();
  /** Other replicas' notes: the `at` this replica last saw, and since when (its Redis clock estimate). */
  private readonly observed = new Map<string, { at: number; since: number }>();
  private readonly notes: UnwrittenShardNotes;
  /** The last failure logged per what failed (logged again only when it changes or recurs). */
  private readonly reported = new Map<string, string>();

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: KeySpace,
    /** `stream`'s record as stored now (not a cache), or `undefined`. */
    private readonly storedRecord: (stream: string) => Promise<StreamRecord | undefined>,
    private readonly log: ErrorLog,
  ) {
    this.notes = new UnwrittenShardNotes(redis, keys);
  }

  /** Before an attempt opens its shards: notes them durably (a failure fails the attempt). */
  async opening(note: UnwrittenNote): Promise<void> {
    this.own.set(note.opener, note);
    try {
      await this.notes.write([note]);
    } catch (error) {
      this.own.delete(note.opener);
      throw error;
    }
  }

  /** The attempt wrote its record, or opened nothing itself: its note goes. */
  async done(opener: string): Promise<void> {
    await this.remove([opener]);
  }

  /** The attempt did not write its record: `ids`, which it may have opened, wait for one. */
  unwritten(stream: string, ids: readonly number[], opener: string): void {
    let waiting = this.pending.get(stream);
    if (waiting === undefined) {
      waiting = { shards: new Map(), announced: 0 };
      this.pending.set(stream, waiting);
    }
    for (const id of ids) {
      const openers = waiting.shards.get(id) ?? new Set<string>();
      waiting.shards.set(id, openers.add(opener));
    }
  }

  /**
   * Settles every stream with shards waiting here, vouches for this replica's notes, and settles
   * the notes no replica vouched for in {@link ABANDONED_AFTER_MS}.
   */
  async settleAll(now: number): Promise<void> {
    // a snapshot: settle deletes a stream's entry and re-adds what failed, which a live iterator
    // would visit again in the same call
    for (const stream of Array.from(this.pending.keys())) await this.settle(stream);
    try {
      await this.vouch(now);
      await this.settleAbandoned(now);
      this.reported.delete('sweep');
    } catch (error) {
      this.once(
        'sweep',
        `could not look for shards that stopped replicas left open (${String(error)}); trying again at the next check`,
      );
    }
  }

  /**
   * When a record of `stream` is stored: withdraws the shards waiting here that it does not name
   * as shards, with every opener that may have opened them (the script changes nothing for
   * another's; a running reshard's new shard is left alone once its step took it over, and
   * withdrawn before, which keeps what stale producers wrote out of it). Left open, they would take
   * the writes of a producer holding routing that names them (the lost one, or one from before a
   * reshard) where no member reads. Before a record is stored, another creation may still borrow
   * these shards and name them (its open left them this one's), so they wait (logged once).
   */
  async settle(stream: string): Promise<void> {
    if (!this.pending.has(stream)) return;
    let record: StreamRecord | undefined;
    try {
      record = await this.storedRecord(stream);
      this.reported.delete(`read:${stream}`);
    } catch (error) {
      this.once(
        `read:${stream}`,
        `could not read the catalog to take back shards of ${stream} opened for a record that was not written (${String(error)}); trying again at the next check`,
      );
      return;
    }
    const waiting = this.pending.get(stream);
    if (waiting === undefined) return; // another call settled it meanwhile
    if (record === undefined) {
      if (waiting.shards.size > waiting.announced) {
        waiting.announced = waiting.shards.size;
        this.log.error(
          `a record of ${stream} was not written and none is stored yet; shards ${sorted(waiting.shards.keys()).join(', ')} opened for it stay open until one is, and are then taken back unless it names them`,
        );
      }
      return;
    }
    // what waits now, taken in the same turn as the delete: a later failure adds anew
    this.pending.delete(stream);
    const named = new Set(record.shards.map((s) => s.id));
    const withdrawals = [...waiting.shards]
      .filter(([id]) => !named.has(id))
      .flatMap(([id, openers]) => [...openers].map((opener) => ({ id, opener })));
    const outcomes = await Promise.allSettled(
      withdrawals.map(({ id, opener }) =>
        withdrawShard(this.redis, this.keys.shardKey(stream, id), opener),
      ),
    );
    const failed = new Set<number>();
    const retried = new Set<string>();
    outcomes.forEach((outcome, i) => {
      const { id, opener } = withdrawals[i] as { id: number; opener: string };
      if (outcome.status === 'rejected') {
        failed.add(id);
        retried.add(opener);
        this.unwritten(stream, [id], opener); // tried again at the next check
      } else if (outcome.value === 'stream-moved' || outcome.value === 'moved-before') {
        // (moved-before: this replica's earlier call did it, and its reply was lost)
        this.reportMoved(stream, id, opener);
      }
    });
    const settled = new Set([...waiting.shards.values()].flatMap((openers) => [...openers]));
    await this.remove([...settled].filter((o) => !retried.has(o)));
    if (failed.size === 0) this.reported.delete(`withdraw:${stream}`);
    else {
      this.once(
        `withdraw:${stream}`,
        `could not withdraw shards ${sorted(failed).join(', ')} of ${stream}, opened for a record that was not written; trying again at the next check`,
      );
    }
  }

  /** Refreshes the time of this replica's notes, so no other replica takes them for abandoned. */
  private async vouch(now: number): Promise<void> {
    // (always a new `at`: others judge a note by whether it changes; and written even when the
    // note was just removed, since a sweep may have removed it before this attempt's opens landed)
    const notes = [...this.own.values()].map((note) => ({
      ...note,
      at: Math.max(now, note.at + 1),
    }));
    await this.notes.write(notes);
    for (const note of notes) if (this.own.has(note.opener)) this.own.set(note.opener, note);
  }

  /**
   * Settles the notes this replica has seen unchanged for {@link ABANDONED_AFTER_MS} (no replica
   * vouched for them: the one that wrote them stopped or crashed between its opens and its
   * settle, or has not reached Redis since), each against its stream's record as stored just
   * before, the same way as {@link settle}; a note whose stream has no record yet waits. Judged
   * by how long this replica has seen the note unchanged (on its estimate of the Redis clock), so
   * the time written into a note by another replica does not matter; a step of the Redis clock
   * moves the estimate, and with it the 60 s (docs/protocol.md §4.6).
   */
  private async settleAbandoned(now: number): Promise<void> {
    const { notes, unreadable } = await this.notes.read();
    const present = new Set([...notes.map((n) => n.opener), ...unreadable]);
    for (const opener of this.observed.keys())
      if (!present.has(opener)) this.observed.delete(opener);
    for (const what of this.reported.keys()) {
      const field = /^(?:unreadable|take-back):(.*)$/s.exec(what)?.[1];
      if (field !== undefined && !present.has(field)) this.reported.delete(what);
    }
    for (const field of unreadable) {
      this.once(
        `unreadable:${field}`,
        `${this.keys.unwrittenShardsKey()} holds a field this coordinator cannot read (${field}); it is left as it is (docs/operations.md, "Redis lost data")`,
      );
    }
    for (const note of notes) {
      if (this.own.has(note.opener)) continue; // this replica's: it vouches for it while it runs
      const seen = this.observed.get(note.opener);
      if (seen === undefined || seen.at !== note.at) {
        this.observed.set(note.opener, { at: note.at, since: now });
        continue;
      }
      const quietMs = now - seen.since;
      if (quietMs < ABANDONED_AFTER_MS) continue;
      try {
        await this.takeBack(note, quietMs);
      } catch (error) {
        this.once(
          `take-back:${note.opener}`,
          `could not take back the shards of ${note.stream} noted by opener ${note.opener} (${String(error)}); trying again at the next check`,
        );
      }
    }
  }

  private async takeBack(note: UnwrittenNote, quietMs: number): Promise<void> {
    const { stream, opener } = note;
    const record = await this.storedRecord(stream);
    if (record === undefined) return; // none stored yet: another creation may still name them
    const named = new Set(record.shards.map((s) => s.id));
    const ids = note.ids.filter((id) => !named.has(id));
    const outcomes = await Promise.allSettled(
      ids.map((id) => withdrawShard(this.redis, this.keys.shardKey(stream, id), opener)),
    );
    const taken: number[] = [];
    const failed: number[] = [];
    let unopened = false;
    outcomes.forEach((outcome, i) => {
      const id = ids[i] as number;
      if (outcome.status === 'rejected') failed.push(id);
      else if (outcome.value === 'withdrawn' || outcome.value === 'stream-moved') taken.push(id);
      else if (outcome.value === 'not-open') unopened = true;
      // (moved-before: taken back earlier, by its own replica or another sweep; said then)
      if (outcome.status === 'fulfilled' && outcome.value === 'stream-moved')
        this.reportMoved(stream, id, opener);
    });
    if (taken.length > 0) {
      this.log.error(
        `took back shards ${sorted(taken).join(', ')} of ${stream}: a creation or restore (opener ${opener}) opened them for a record that was not written, and its replica has not vouched for them for ${Math.round(quietMs / 1000)} s (it stopped, or cannot reach Redis); the stored record does not name them (docs/protocol.md §13.6)`,
      );
    }
    if (failed.length > 0) {
      this.once(
        `take-back:${opener}`,
        `could not take back shards ${sorted(failed).join(', ')} of ${stream}, opened for a record that was not written (opener ${opener}); trying again at the next check`,
      );
      return;
    }
    this.reported.delete(`take-back:${opener}`);
    // an open still in flight may land on a shard found not open: kept for a while for it
    if (unopened && quietMs < UNOPENED_KEPT_MS) return;
    this.observed.delete(opener);
    await this.remove([opener]);
  }

  /** Removes notes; one whose removal fails is settled again later, finding nothing to do. */
  private async remove(openers: readonly string[]): Promise<void> {
    for (const opener of openers) this.own.delete(opener);
    try {
      await this.notes.remove(openers);
    } catch {
      // left in Redis: no longer vouched for, a later sweep finds its shards settled
    }
  }

  private reportMoved(stream: string, id: number, opener: string): void {
    const shardKey = this.keys.shardKey(stream, id);
    this.log.error(
      `${shardKey} held entries or consumer groups when it was withdrawn (it had been opened for a record of ${stream} that was not written; the stored record does not name it, docs/protocol.md §13.6); no member reads them: they are in ${withdrawnEntriesKey(shardKey, opener)} (docs/operations.md, "Redis lost data")`,
    );
  }

  /** Logs `message` unless it is what was last logged for `what` (not once per check). */
  private once(what: string, message: string): void {
    if (this.reported.get(what) === message) return;
    this.reported.set(what, message);
    this.log.error(message);
  }
}

function sorted(ids: Iterable<number>): number[] {
  return [...ids].sort((a, b) => a - b);
}
