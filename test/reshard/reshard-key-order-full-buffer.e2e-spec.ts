import { setTimeout as delay } from 'node:timers/promises';
import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import {
  checkInvariants,
  fetchGroupEvents,
  formatInvariantReport,
  type HandledRecord,
  ownershipFromEvents,
  type ProducedMessage,
} from '../support/invariants/index.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';
import { waitFor } from '../support/wait.js';
import { type AppHandled, type MemberApp, startMemberApp } from '../library/e2e/member-app.js';
import { reshard, routingOf, waitReshardDone } from './support/reshard-cluster.js';

const GROUP = 'keyed';
const MAX_BUFFERED = 8;
const MAX_CONCURRENCY = 4;
const HANDLER_MS = 30;
const KEYS = 24;

/**
 * `ordering: 'key'` through a strict reshard (2 → 3 shards) while the old shards' buffers are
 * full (the per-shard cap on entries read but not yet handled is reached, so reads pause) and
 * handlers are slow, with two real Nest apps and a real coordinator: every key keeps its order
 * across the parent → child handoff (a key's first entry on a new shard starts only after its
 * last one on the old shard ended), nothing is lost, and no member acknowledges an entry of a
 * shard the coordinator no longer lets it own. Run three ways: the same two owners throughout; the
 * owner of a parent leaving while its buffer is full; a third member joining mid-drain (it gets
 * only new shards, so keys hand off between members at the parent → child step).
 */
function scenario(title: string, leaveMidDrain: boolean, joinMidDrain = false): void {
  describe(title, () => {
    const redis = useRedisPrefix(
      leaveMidDrain
        ? 'reshard-key-leave'
        : joinMidDrain
          ? 'reshard-key-join'
          : 'reshard-key-buffer',
    );
    const keys = new KeySpace(redis.prefix);
    let coordinator: CoordinatorProcess;
    let api: CoordinatorApi;
    const apps: MemberApp[] = [];

    beforeAll(async () => {
      coordinator = await CoordinatorProcess.start({
        prefix: redis.prefix,
        env: { STREAMS: 'orders:2', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '3000' },
      });
      api = new CoordinatorApi(coordinator.url);
    });
    afterAll(async () => {
      for (const a of apps) await a.app.close().catch(() => undefined);
      await coordinator?.stop();
    });

    const member = async (memberId: string): Promise<MemberApp> => {
      const app = await startMemberApp({
        coordinatorUrl: coordinator.url,
        redis: redisUrl(),
        group: GROUP,
        memberId,
        module: {
          handlerDefaults: {
            ordering: 'key',
            maxConcurrency: MAX_CONCURRENCY,
            maxBufferedEntries: MAX_BUFFERED,
          },
        },
        handle: () => delay(HANDLER_MS),
      });
      apps.push(app);
      return app;
    };

    /** Most entries pending (read, not acked) on any of `shards` for the group right now. */
    const maxPending = async (shards: readonly number[]): Promise<number> => {
      let most = 0;
      for (const shard of shards) {
        const summary = (await redis
          .redis()
          .xpending(keys.shardKey('orders', shard), GROUP)
          .catch(() => [0])) as unknown[];
        most = Math.max(most, Number(summary[0] ?? 0));
      }
      return most;
    };

    it('per-key order across parent → child, nothing lost, no ack without ownership', async () => {
      const a = await member('kb-a');
      const b = await member('kb-b');
      await waitFor(
        async () => {
          const res = await api.get<DescribedGroup>(`/v1/groups/${GROUP}`);
          return (
            res.status === 200 &&
            res.body.state === 'STABLE' &&
            res.body.members.length === 2 &&
            res.body.members.every((m) => m.assignment.flatMap((x) => x.shards).length === 1)
          );
        },
        { timeoutMs: 15_000, intervalMs: 20, message: 'both members to own one shard each' },
      );

      const keyNames = Array.from({ length: KEYS }, (_, i) => `key-${i}`);
      const batch = (from: number, to: number) => {
        const messages = [];
        for (let seq = from; seq < to; seq++)
          for (const key of keyNames) messages.push({ key, payload: { seq } });
        return messages;
      };
      // a backlog of ~2.4 s per old shard (120 entries, 4 at a time, 30 ms each)
      await a.producer.publishBatch('orders', batch(0, 10));
      let sawFull = 0;
      await waitFor(
        async () => {
          sawFull = Math.max(sawFull, await maxPending([0, 1]));
          return sawFull >= MAX_BUFFERED;
        },
        { timeoutMs: 10_000, intervalMs: 5, message: 'a shard to have a full buffer' },
      );
      const accepted = await reshard(api, 'orders', 3);
      const children = accepted.shards.map((s) => s.id);
      expect(children).toEqual([2, 3, 4]);
      // written under the new layout while the parents' buffers are still full: these wait for
      // their parents to drain
      await b.producer.publishBatch('orders', batch(10, 14));
      const parentsBusy = await maxPending([0, 1]);
      let leftWithBuffered = 0;
      let c: MemberApp | undefined;
      if (joinMidDrain) c = await member('kb-c');
      if (leaveMidDrain) {
        // kb-a leaves while its parent shard's buffer is full and the reshard drains: its
        // entries are settled before the release, and kb-b goes on with the parent, then the children
        leftWithBuffered = await maxPending(a.runtime.status().held.map((h) => h.shard));
        await a.app.close();
      }
      await waitReshardDone(api, 'orders', 45_000);
      const total = KEYS * 14;
      const all = (): AppHandled[] => [...a.handled, ...b.handled, ...(c?.handled ?? [])];
      await waitFor(() => new Set(all().map((h) => `${h.key}#${h.seq}`)).size >= total, {
        timeoutMs: 30_000,
        intervalMs: 20,
        message: () => `the ${total} messages to be handled (${all().length} so far)`,
      });
      // the acks of the last handlings arrive a moment after them
      await waitFor(
        () => {
          const acked = new Set(
            [...a.acks, ...b.acks, ...(c?.acks ?? [])].flatMap((r) =>
              r.a.map((id) => `${r.s}/${id}`),
            ),
          );
          return all().every((h) => acked.has(`${h.shard}/${h.id}`));
        },
        { timeoutMs: 10_000, intervalMs: 20, message: 'every handling to be acknowledged' },
      );

      const handled: HandledRecord[] = all().map((h) => ({
        m: h.memberId,
        st: 'orders',
        s: h.shard,
        k: h.key,
        id: h.id,
        q: h.seq,
        d: h.deliveryCount,
        t0: h.t0,
        t1: h.t1,
      }));
      const produced = new Map<string, ProducedMessage>();
      for (const h of handled)
        produced.set(`${h.s}/${h.id}`, { key: h.k, seq: h.q, shard: h.s, id: h.id });
      const events = await fetchGroupEvents(coordinator.url, TEST_TOKENS.admin, GROUP);
      const report = checkInvariants(
        {
          stream: 'orders',
          produced: [...produced.values()],
          handled,
          acks: [...a.acks, ...b.acks, ...(c?.acks ?? [])],
          ownership: ownershipFromEvents(events),
          pending: null,
        },
        { ordering: 'key' },
      );
      process.stdout.write(
        `\n${formatInvariantReport(report, 'reshard, key order, full buffer')}\n`,
      );

      // nothing lost: every (key, seq) handled, each entry of it on one shard only
      expect(new Set(handled.map((h) => `${h.k}#${h.q}`)).size).toBe(total);
      expect(produced.size).toBe(total);
      expect(report.results.perKeyOrder.ok).toBe(true);
      expect(report.results.singleOwner.ok).toBe(true);
      expect(report.results.zombieSafety.byKind['acked-without-ownership'] ?? 0).toBe(0);
      expect(report.results.zombieSafety.ok).toBe(true);
      // strict: per key, every handling on a new shard started after the key's last on an old one
      const crossed: string[] = [];
      const late: string[] = [];
      for (const key of keyNames) {
        const mine = handled.filter((h) => h.k === key);
        const old = mine.filter((h) => h.s < 2);
        const fresh = mine.filter((h) => h.s >= 2);
        if (old.length === 0 || fresh.length === 0) continue;
        crossed.push(key);
        const lastOld = Math.max(...old.map((h) => h.t1));
        const firstNew = Math.min(...fresh.map((h) => h.t0));
        if (firstNew < lastOld) late.push(`${key}: new shard at ${firstNew}, old until ${lastOld}`);
        expect(Math.max(...old.map((h) => h.q))).toBeLessThan(Math.min(...fresh.map((h) => h.q)));
      }
      expect(late).toEqual([]);
      expect(crossed.length).toBe(KEYS);
      // the interleaving happened: buffers full before the reshard, still busy when it was accepted
      expect(sawFull).toBeGreaterThanOrEqual(MAX_BUFFERED);
      expect(parentsBusy).toBeGreaterThan(0);
      const routing = await routingOf(api, 'orders');
      expect(routing.shards.map((s) => s.id)).toEqual(children);
      expect([...a.logs, ...b.logs, ...(c?.logs ?? [])].filter((l) => l.level === 'error')).toEqual(
        [],
      );
      if (joinMidDrain) {
        // kb-c, joined during the drain, got only new shards: its keys' parents were another
        // member's, so their order held across members too
        expect(c?.handled.length ?? 0).toBeGreaterThan(0);
        expect(c?.handled.every((h) => h.shard >= 2)).toBe(true);
      }
      if (leaveMidDrain) {
        // the parent moved while kb-a held more entries than it could run at once
        expect(leftWithBuffered).toBeGreaterThan(MAX_CONCURRENCY);
        expect(report.counts.handOffs).toBeGreaterThan(0);
        expect(
          b.handled.some((h) => h.shard < 2 && a.handled.some((x) => x.shard === h.shard)),
        ).toBe(true);
      }
    }, 60_000);
  });
}

scenario('reshard with key ordering and a full buffer', false);
scenario('reshard with key ordering and a full buffer: the parent owner leaves mid-drain', true);
scenario(
  'reshard with key ordering and a full buffer: a third member joins mid-drain',
  false,
  true,
);
