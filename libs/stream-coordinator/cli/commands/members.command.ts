import { type CliContext, printJson, segment } from './cli-context.js';

/** `rsc members remove <group> <member>`: removed as if its session expired. */
export async function removeMember(ctx: CliContext, group: string, member: string): Promise<void> {
  await ctx.client.request<undefined>(
    'DELETE',
    `/v1/groups/${segment(group)}/members/${segment(member)}`,
  );
  if (ctx.json) return printJson(ctx, { groupId: group, memberId: member, removed: true });
  ctx.io.out(`removed member ${member} from group ${group}`);
}
