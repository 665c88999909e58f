import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import type { OwnershipInterval } from './invariant-input.types.js';

/** Events that remove a member (its shards are free from then on). */
const REMOVALS = new Set([
  'MEMBER_LEFT',
  'MEMBER_EXPIRED',
  'MEMBER_FENCED',
  'MEMBER_REMOVED',
  'MEMBER_REPLACED',
]);

interface WireShards {
  stream: string;
  shards: number[];
}

/**
 * Builds the shard ownership timeline from a group's event log (oldest first): `SHARDS_ASSIGNED`
 * opens an interval for each shard; `SHARDS_RELEASED` closes those shards; a removal event
 * (`MEMBER_LEFT`, `MEMBER_EXPIRED`, `MEMBER_FENCED`, `MEMBER_REMOVED`, `MEMBER_REPLACED`, and a
 * `MEMBER_REPLACED` naming `replacedMemberId`) closes every interval of the member. Times are
 * the events' `at` (Redis TIME at commit, whole ms). Intervals still open end with `to: null`.
 */
export function ownershipFromEvents(events: readonly GroupEventEntry[]): OwnershipInterval[] {
  const open = new Map<string, { memberId: string; stream: string; shard: number; from: number }>();
  const done: OwnershipInterval[] = [];
  const close = (id: string, at: number, by: string): void => {
    const o = open.get(id);
    if (!o) return;
    open.delete(id);
    done.push({ ...o, to: at, endedBy: by });
  };
  for (const e of events) {
    const at = Date.parse(e.at);
    const memberId = typeof e.data.memberId === 'string' ? e.data.memberId : null;
    if (memberId === null) continue;
    if (e.type === 'SHARDS_ASSIGNED' || e.type === 'SHARDS_RELEASED') {
      for (const { stream, shards } of (e.data.shards ?? []) as WireShards[]) {
        for (const shard of shards) {
          const id = `${memberId}|${stream}|${shard}`;
          if (e.type === 'SHARDS_RELEASED') close(id, at, e.type);
          else if (!open.has(id)) open.set(id, { memberId, stream, shard, from: at });
        }
      }
    } else if (REMOVALS.has(e.type)) {
      const gone = typeof e.data.replacedMemberId === 'string' ? e.data.replacedMemberId : memberId;
      for (const [id, o] of open) if (o.memberId === gone) close(id, at, e.type);
    }
  }
  for (const o of open.values()) done.push({ ...o, to: null, endedBy: null });
  return done.sort(
    (a, b) =>
      a.from - b.from ||
      (a.memberId < b.memberId ? -1 : a.memberId > b.memberId ? 1 : 0) ||
      a.shard - b.shard,
  );
}

/** Reads a group's whole event log (`GET /v1/groups/{group}/events`, paged). */
export async function fetchGroupEvents(
  baseUrl: string,
  token: string,
  group: string,
): Promise<GroupEventEntry[]> {
  const all: GroupEventEntry[] = [];
  let after: string | undefined;
  for (;;) {
    const query = `limit=1000${after ? `&after=${encodeURIComponent(after)}` : ''}`;
    const res = await fetch(`${baseUrl}/v1/groups/${encodeURIComponent(group)}/events?${query}`, {
      headers: { authorization: `Bearer ${token}` },
      signal: AbortSignal.timeout(10_000),
    });
    if (res.status !== 200)
      throw new Error(`GET events of ${group}: HTTP ${res.status} ${await res.text()}`);
    const page = ((await res.json()) as { events: GroupEventEntry[] }).events;
    all.push(...page);
    if (page.length < 1000) return all;
    after = (page[page.length - 1] as GroupEventEntry).id;
  }
}
