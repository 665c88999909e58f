import type { DescribedGroup, GroupListing } from '@redis-stream-coordinator/nestjs/protocol';
import { formatShards, formatTable } from '../table-format.js';
import { type CliContext, printJson, segment } from './cli-context.js';

/** `rsc groups list`. */
export async function listGroups(ctx: CliContext): Promise<void> {
  const { body } = await ctx.client.get<{ groups: GroupListing[] }>('/v1/groups');
  if (ctx.json) return printJson(ctx, body);
  if (body.groups.length === 0) return ctx.io.out('no groups');
  ctx.io.out(
    formatTable(
      ['GROUP', 'STATE', 'EPOCH', 'MEMBERS'],
      body.groups.map((g) => [g.groupId, g.state, String(g.groupEpoch), String(g.members)]),
    ),
  );
}

/** `rsc groups describe <group>`. */
export async function describeGroup(ctx: CliContext, group: string): Promise<void> {
  const { body } = await ctx.client.get<DescribedGroup>(`/v1/groups/${segment(group)}`);
  if (ctx.json) return printJson(ctx, body);
  ctx.io.out(
    `group ${body.groupId}: ${body.state}, group epoch ${body.groupEpoch}, assignment epoch ${body.assignmentEpoch}, assignor ${body.assignor}, ${body.members.length} member(s)`,
  );
  if (body.members.length === 0) return;
  ctx.io.out('');
  ctx.io.out(
    formatTable(
      [
        'MEMBER',
        'EPOCH',
        'STATE',
        'ASSIGNED',
        'REVOKING',
        'TARGET',
        'LAST HEARTBEAT',
        'HOST',
        'INSTANCE',
      ],
      body.members.map((m) => [
        m.memberId,
        String(m.memberEpoch),
        m.memberEpoch === -2 ? 'TEMPORARILY_LEFT' : m.state,
        formatShards(m.assignment),
        formatShards(m.pendingRevocation),
        formatShards(m.target),
        m.lastHeartbeatAt,
        m.clientHost ?? '-',
        m.instanceId ?? '-',
      ]),
    ),
  );
}
