import { type GroupEventEntry, listTargetMoves } from '@redis-stream-coordinator/nestjs/protocol';
import { intOption } from '../cli-args.js';
import { formatShards } from '../table-format.js';
import { type CliContext, segment } from './cli-context.js';

/** Bookkeeping entries of the log (state snapshots), hidden unless `--all`. */
const BOOKKEEPING = new Set(['GROUP_STATE_CHANGED', 'GROUP_CHECKPOINT']);

type Shards = Array<{ stream: string; shards: number[] }>;

/** One event as a human line: time, epoch, type, the important fields. */
export function formatEvent(e: GroupEventEntry): string {
  const d = e.data;
  const str = (k: string): string => {
    const v = d[k];
    if (v === undefined || v === null) return '';
    return `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v as string | number | boolean)}`;
  };
  let detail: string;
  switch (e.type) {
    case 'TARGET_ASSIGNMENT_CHANGED': {
      const { listed, more } = listTargetMoves(d, 8);
      detail = `reason=${String(d.reason)} assignor=${String(d.assignor)} moved=${String(d.moved)}${listed.length ? `: ${listed.join(', ')}` : ''}${more > 0 ? ` (+${more} more)` : ''}`;
      break;
    }
    case 'SHARDS_ASSIGNED':
    case 'SHARDS_REVOKED':
    case 'SHARDS_RELEASED':
      detail = `${str('memberId')} shards=${formatShards(d.shards as Shards)}`;
      break;
    case 'GROUP_EPOCH_BUMPED':
      detail = `${str('groupEpoch')} ${str('reason')}`;
      break;
    case 'ASSIGNOR_FALLBACK':
      detail = `${str('requested')} not configured, ${str('used')} ${str('membersNaming')}`;
      break;
    case 'GROUP_STATE_CHANGED':
      detail = `version=${String(d.v)}`;
      break;
    case 'GROUP_CHECKPOINT':
      detail = `version=${String(d.v)}`;
      break;
    default: {
      const keys = [
        'memberId',
        'reason',
        'memberEpoch',
        'previousMemberEpoch',
        'state',
        'instanceId',
      ];
      const parts = keys.map(str).filter(Boolean);
      for (const k of ['released', 'pendingRevocation', 'reserved']) {
        if (Array.isArray(d[k]) && (d[k] as Shards).length > 0)
          parts.push(`${k}=${formatShards(d[k] as Shards)}`);
      }
      detail = parts.length > 0 ? parts.join(' ') : JSON.stringify(d);
    }
  }
  return `${e.at}  epoch ${String(e.groupEpoch).padStart(3)}  ${e.type.padEnd(25)}  ${detail}`.trimEnd();
}

/**
 * `rsc events tail <group> [-n N] [--after ID] [--follow] [--interval MS] [--all]`: the last N
 * events (default 20), or every event after `--after`, then, with `--follow`, new ones as they
 * are written until interrupted. `--json` prints one JSON event per line; `--all` includes the
 * log's state snapshots (`GROUP_STATE_CHANGED`, `GROUP_CHECKPOINT`).
 */
export async function tailEvents(ctx: CliContext, group: string): Promise<void> {
  const limit = intOption(ctx.args, 'limit', 20, 1, 100_000);
  const interval = intOption(ctx.args, 'interval', 1000, 50, 3_600_000);
  const all = ctx.args.flags.has('all');
  const follow = ctx.args.flags.has('follow');
  const path = `/v1/groups/${segment(group)}/events`;
  const show = (e: GroupEventEntry): void => {
    if (!all && BOOKKEEPING.has(e.type)) return;
    ctx.io.out(ctx.json ? JSON.stringify(e) : formatEvent(e));
  };
  const page = async (after: string | undefined): Promise<GroupEventEntry[]> => {
    const q = after ? `?limit=1000&after=${encodeURIComponent(after)}` : '?limit=1000';
    return (await ctx.client.get<{ events: GroupEventEntry[] }>(`${path}${q}`)).body.events;
  };
  // Read to the end, keeping the last `limit` shown events.
  let after = ctx.args.values.get('after');
  const explicitStart = after !== undefined;
  let kept: GroupEventEntry[] = [];
  for (;;) {
    const events = await page(after);
    const shown = events.filter((e) => all || !BOOKKEEPING.has(e.type));
    kept = explicitStart ? [...kept, ...shown] : [...kept, ...shown].slice(-limit);
    if (events.length > 0) after = (events[events.length - 1] as GroupEventEntry).id;
    if (events.length < 1000) break;
  }
  for (const e of kept) show(e);
  if (!follow) return;
  const signal = ctx.io.signal;
  while (!signal?.aborted) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, interval);
      signal?.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
    if (signal?.aborted) break;
    for (;;) {
      const events = await page(after);
      for (const e of events) show(e);
      if (events.length > 0) after = (events[events.length - 1] as GroupEventEntry).id;
      if (events.length < 1000) break;
    }
  }
}
