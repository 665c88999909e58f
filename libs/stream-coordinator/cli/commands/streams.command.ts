import type { StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import { intOption } from '../cli-args.js';
import { formatTable, ranges } from '../table-format.js';
import { type CliContext, printJson, segment } from './cli-context.js';

function reshardSummary(r: StreamRouting['resharding']): string {
  if (!r) return '-';
  const drained = r.drain.filter((d) => d.pendingGroups.length === 0).length;
  return `${r.state} ${r.fromShards.length}→${r.toShards.length} (${drained}/${r.drain.length} old shards drained)`;
}

/** `rsc streams list`. */
export async function listStreams(ctx: CliContext): Promise<void> {
  const { body } = await ctx.client.get<{ streams: StreamRouting[] }>('/v1/streams');
  if (ctx.json) return printJson(ctx, body);
  if (body.streams.length === 0) return ctx.io.out('no streams');
  ctx.io.out(
    formatTable(
      ['STREAM', 'ROUTING EPOCH', 'SHARDS', 'IDS', 'RESHARDING'],
      body.streams.map((s) => [
        s.stream,
        String(s.routingEpoch),
        String(s.shards.length),
        ranges(s.shards.map((x) => x.id)),
        reshardSummary(s.resharding),
      ]),
    ),
  );
}

function printRouting(ctx: CliContext, s: StreamRouting, verb = ''): void {
  ctx.io.out(
    `${verb}stream ${s.stream}: ${s.shards.length} shard(s), routing epoch ${s.routingEpoch}, dead letters in ${s.deadLetterKey}`,
  );
  ctx.io.out('');
  ctx.io.out(
    formatTable(
      ['SHARD', 'KEY'],
      s.shards.map((x) => [String(x.id), x.key]),
    ),
  );
  const r = s.resharding;
  if (!r) return;
  ctx.io.out('');
  ctx.io.out(`resharding: ${reshardSummary(r)}, mode ${r.mode}, started ${r.startedAt}`);
  ctx.io.out(
    formatTable(
      ['OLD SHARD', 'CLOSED', 'DRAINED BY', 'PENDING FOR', 'REMOVED'],
      r.drain.map((d) => [
        String(d.shard),
        d.closed ? 'yes' : 'no',
        d.drainedGroups.join(',') || '-',
        d.pendingGroups.join(',') || '-',
        d.removed ? 'yes' : 'no',
      ]),
    ),
  );
  for (const g of r.idleGroups ?? []) {
    ctx.io.out(
      `waiting for idle group ${g.group} (no member since ${g.since}): its old shards are kept until it drains them; \`rsc streams abandon ${s.stream} ${g.group}\` gives them up`,
    );
  }
  for (const g of r.abandonedGroups)
    ctx.io.out(`abandoned group ${g.group} (${g.reason}, ${g.at})`);
}

/** `rsc streams describe <stream>`. */
export async function describeStream(ctx: CliContext, stream: string): Promise<void> {
  const { body } = await ctx.client.get<StreamRouting>(`/v1/streams/${segment(stream)}`);
  if (ctx.json) return printJson(ctx, body);
  printRouting(ctx, body);
}

/** `rsc streams create <stream> --shards N`. */
export async function createStream(ctx: CliContext, stream: string): Promise<void> {
  const shards = intOption(ctx.args, 'shards');
  const { status, body } = await ctx.client.request<StreamRouting>(
    'PUT',
    `/v1/streams/${segment(stream)}`,
    { shards },
  );
  if (ctx.json) return printJson(ctx, body);
  printRouting(ctx, body, status === 201 ? 'created ' : 'exists: ');
}

/** `rsc streams reshard <stream> --shards M`. */
export async function reshardStream(ctx: CliContext, stream: string): Promise<void> {
  const shards = intOption(ctx.args, 'shards');
  const { body } = await ctx.client.request<StreamRouting>(
    'POST',
    `/v1/streams/${segment(stream)}/reshard`,
    { shards },
  );
  if (ctx.json) return printJson(ctx, body);
  printRouting(ctx, body, 'reshard requested: ');
}

/** `rsc streams abandon <stream> <group>`: the running reshard stops waiting for the group. */
export async function abandonGroup(ctx: CliContext, stream: string, group: string): Promise<void> {
  const { body } = await ctx.client.request<StreamRouting>(
    'POST',
    `/v1/streams/${segment(stream)}/groups/${segment(group)}/abandon`,
    {},
  );
  if (ctx.json) return printJson(ctx, body);
  printRouting(ctx, body, `abandoned group ${group}: `);
}
