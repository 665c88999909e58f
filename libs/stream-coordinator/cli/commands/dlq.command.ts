import type {
  DeadLetterEntry,
  DeadLetterListResponse,
  DeadLetterPurgeResponse,
  DeadLetterReplayResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import { DEAD_LETTER_REASONS } from '@redis-stream-coordinator/nestjs/protocol';
import { intOption, type ParsedArgs } from '../cli-args.js';
import { CliError, CliUsageError } from '../cli.errors.js';
import { formatTable } from '../table-format.js';
import { type CliContext, printJson, segment } from './cli-context.js';

/** Options of `rsc dlq list|replay|purge` that select entries. */
export const DLQ_FILTER_VALUES = ['group', 'reason', 'error', 'since', 'until'] as const;

const UNIT_MS: Readonly<Record<string, number>> = {
  s: 1000,
  m: 60_000,
  h: 3_600_000,
  d: 86_400_000,
};

/**
 * A `--since`/`--until` value as ms since the epoch: a duration ago (`90s`, `15m`, `2h`, `7d`),
 * an ISO-8601 time, or ms since the epoch.
 */
export function parseTimeOption(name: string, raw: string, nowMs: number): number {
  const ago = /^(\d{1,9})([smhd])$/.exec(raw);
  if (ago) return nowMs - Number(ago[1]) * (UNIT_MS[ago[2] as string] as number);
  if (/^\d{1,16}$/.test(raw)) return Number(raw);
  const parsed = /^\d{4}-\d{2}-\d{2}/.test(raw) ? Date.parse(raw) : Number.NaN;
  if (Number.isFinite(parsed) && parsed >= 0) return parsed;
  throw new CliUsageError(
    `option --${name} must be a duration ago (30m, 2h, 7d), an ISO-8601 time or ms since the epoch (got ${JSON.stringify(raw)})`,
  );
}

/** The filter options as the API's filter fields (`group`, `reason`, `error`, `from`, `to`). */
export function filterFromArgs(args: ParsedArgs, nowMs: number): Record<string, string | number> {
  const out: Record<string, string | number> = {};
  const group = args.values.get('group');
  const reason = args.values.get('reason');
  const error = args.values.get('error');
  const since = args.values.get('since');
  const until = args.values.get('until');
  if (group !== undefined) out.group = group;
  if (reason !== undefined) {
    if (!(DEAD_LETTER_REASONS as readonly string[]).includes(reason)) {
      throw new CliUsageError(
        `option --reason must be one of ${DEAD_LETTER_REASONS.join(', ')} (got ${JSON.stringify(reason)})`,
      );
    }
    out.reason = reason;
  }
  if (error !== undefined) out.error = error;
  if (since !== undefined) out.from = parseTimeOption('since', since, nowMs);
  if (until !== undefined) out.to = parseTimeOption('until', until, nowMs);
  return out;
}

/** `--ids a,b,c` as a list, or undefined. */
export function idsFromArgs(args: ParsedArgs): string[] | undefined {
  const raw = args.values.get('ids');
  if (raw === undefined) return undefined;
  const ids = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (ids.length === 0) throw new CliUsageError('option --ids needs at least one id');
  return ids;
}

function base(stream: string): string {
  return `/v1/streams/${segment(stream)}/dead-letters`;
}

function oneLine(text: string | null, max: number): string {
  const flat = (text ?? '').replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat || '-';
}

/** `rsc dlq list <stream>`. */
export async function listDeadLetters(ctx: CliContext, stream: string): Promise<void> {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filterFromArgs(ctx.args, Date.now()))) {
    query.set(name, String(value));
  }
  if (ctx.args.flags.has('replayed') && ctx.args.flags.has('not-replayed')) {
    throw new CliUsageError('options --replayed and --not-replayed exclude each other');
  }
  if (ctx.args.flags.has('replayed')) query.set('replayed', 'true');
  if (ctx.args.flags.has('not-replayed')) query.set('replayed', 'false');
  const after = ctx.args.values.get('after');
  if (after !== undefined) query.set('after', after);
  query.set('limit', String(intOption(ctx.args, 'limit', 50, 1, 1000)));
  const { body } = await ctx.client.get<DeadLetterListResponse>(
    `${base(stream)}?${query.toString()}`,
  );
  if (ctx.json) return printJson(ctx, body);
  if (body.entries.length === 0) {
    ctx.io.out(`no dead letters in ${body.deadLetterKey} match (${body.scanned} read)`);
  } else {
    ctx.io.out(
      formatTable(
        [
          'ID',
          'FAILED AT',
          'GROUP',
          'SHARD',
          'ORIGINAL ID',
          'REASON',
          'DELIVERIES',
          'KEY',
          'REPLAYED',
          'ERROR',
        ],
        body.entries.map((e) => [
          e.id,
          e.failedAt ?? '-',
          e.group ?? '-',
          e.shard === null ? '-' : String(e.shard),
          e.originalId ?? '-',
          e.reason ?? '-',
          e.deliveryCount === null ? '-' : String(e.deliveryCount),
          oneLine(e.key, 32),
          e.replay === null ? 'no' : e.replay.state === 'done' ? 'yes' : 'pending',
          oneLine(`${e.errorName ? `${e.errorName}: ` : ''}${e.error ?? ''}`, 80),
        ]),
      ),
    );
  }
  if (body.nextCursor !== null) {
    ctx.io.out('');
    ctx.io.out(`more: rsc dlq list ${stream} --after ${body.nextCursor} (same filters)`);
  }
}

/** `rsc dlq show <stream> <id>`. */
export async function showDeadLetter(ctx: CliContext, stream: string, id: string): Promise<void> {
  const { body } = await ctx.client.get<DeadLetterEntry>(`${base(stream)}/${segment(id)}`);
  if (ctx.json) return printJson(ctx, body);
  const line = (label: string, value: string | number | null): void =>
    ctx.io.out(`${`${label}:`.padEnd(18)}${value === null ? '-' : String(value)}`);
  line('dead letter', `${body.id} (stream ${body.stream})`);
  line('original', `shard ${body.shard ?? '-'}, entry ${body.originalId ?? '-'}`);
  line('group', body.group);
  line('member', body.memberId);
  line('reason', body.reason);
  line('deliveries', body.deliveryCount);
  line('failed at', body.failedAt);
  line('error', `${body.errorName ? `${body.errorName}: ` : ''}${body.error ?? ''}`);
  if (body.errorProperties !== null) line('error properties', JSON.stringify(body.errorProperties));
  line('key', body.key);
  line('headers', body.headers === null ? null : JSON.stringify(body.headers));
  line(
    'payload',
    body.payload !== null ? body.payload : body.payloadBase64 && `(base64) ${body.payloadBase64}`,
  );
  line(
    'replayed',
    body.replay === null
      ? 'no'
      : body.replay.state === 'done'
        ? `yes, at ${body.replay.at} as ${body.replay.entryId ?? '-'} on ${body.replay.shardKey ?? '-'}`
        : `in progress (claimed at ${body.replay.at})`,
  );
  if (body.stack !== null) {
    ctx.io.out('stack:');
    for (const l of body.stack.split('\n')) ctx.io.out(`  ${l}`);
  }
}

/** The selection of replay/purge: `ids`, or `filter` (+ `limit`); `all` when asked for. */
function selection(ctx: CliContext, verb: string, stream: string): Record<string, unknown> {
  const ids = idsFromArgs(ctx.args);
  const filter = filterFromArgs(ctx.args, Date.now());
  const hasFilter = Object.keys(filter).length > 0;
  const all = ctx.args.flags.has('all');
  if ([ids !== undefined, hasFilter, all].filter(Boolean).length !== 1) {
    throw new CliUsageError(
      `"dlq ${verb}" takes exactly one of --ids ID,…, filters (--group, --reason, --error, --since, --until) or --all (rsc dlq ${verb} ${stream} --all)`,
    );
  }
  if (ctx.args.values.has('limit') && (ids !== undefined || (all && verb === 'purge'))) {
    throw new CliUsageError(
      `option --limit goes with filters${verb === 'replay' ? ' or --all' : ''}`,
    );
  }
  if (ids !== undefined) {
    return { ids };
  }
  const limit = ctx.args.values.has('limit')
    ? { limit: intOption(ctx.args, 'limit', undefined, 1, 10_000) }
    : {};
  return { filter, ...limit, ...(all ? { all: true } : {}) };
}

/** `rsc dlq replay <stream>`. */
export async function replayDeadLetters(ctx: CliContext, stream: string): Promise<void> {
  const chosen = selection(ctx, 'replay', stream);
  // `--all` replays every entry not yet replayed: an empty filter.
  delete chosen.all;
  const { body } = await ctx.client.request<DeadLetterReplayResponse>(
    'POST',
    `${base(stream)}/replay`,
    chosen,
  );
  const failed = body.results.filter((r) => r.outcome === 'failed');
  if (ctx.json) printJson(ctx, body);
  else if (body.results.length === 0) ctx.io.out('nothing to replay');
  else {
    ctx.io.out(
      formatTable(
        ['ID', 'OUTCOME', 'NEW ID', 'SHARD', 'MESSAGE'],
        body.results.map((r) => [
          r.id,
          r.outcome,
          r.entryId ?? '-',
          r.shardKey ?? '-',
          oneLine(r.message ?? '', 80),
        ]),
      ),
    );
    ctx.io.out('');
    ctx.io.out(`replayed ${body.replayed} of ${body.results.length} selected`);
  }
  if (failed.length > 0) {
    throw new CliError(
      `${failed.length} replay(s) failed (first: ${failed[0]?.id}: ${failed[0]?.message ?? ''}); run the same command again to retry them`,
      1,
    );
  }
}

/** `rsc dlq purge <stream> --yes`. */
export async function purgeDeadLetters(ctx: CliContext, stream: string): Promise<void> {
  const chosen = selection(ctx, 'purge', stream);
  if (!ctx.args.flags.has('yes')) {
    throw new CliUsageError(
      '"dlq purge" deletes dead letters for good: add --yes to confirm (list them first with rsc dlq list)',
    );
  }
  const body = chosen.all === true ? { all: true } : chosen;
  const { body: result } = await ctx.client.request<DeadLetterPurgeResponse>(
    'POST',
    `${base(stream)}/purge`,
    { ...body, confirm: true },
  );
  if (ctx.json) return printJson(ctx, result);
  ctx.io.out(`deleted ${result.deleted} dead letter(s) of stream ${result.stream}`);
}
