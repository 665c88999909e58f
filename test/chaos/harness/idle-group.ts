import { CHAOS_IDLE_GROUP, CHAOS_IDLE_MEMBERS, type ChaosCluster } from './chaos-cluster.js';
import { waitForNoProblems } from '../../support/wait.js';

/**
 * The first half of the `idle-group-reshard` fault: SIGTERM every member of the idle group (a
 * graceful leave, as a deployment scaled to zero) and wait until the group has no member left,
 * so the reshard that follows finds it idle.
 */
export async function stopIdleGroup(cluster: ChaosCluster): Promise<string> {
  for (const name of CHAOS_IDLE_MEMBERS) {
    await cluster.members.get(name)?.process?.stop('SIGTERM');
  }
  await waitForNoProblems(
    async () => {
      const group = await cluster.describe(CHAOS_IDLE_GROUP);
      const ids = group?.members.map((m) => m.memberId) ?? [];
      return ids.length === 0 ? null : `members ${ids.join(',')}`;
    },
    {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: `group ${CHAOS_IDLE_GROUP} to have no member`,
      retryErrors: true,
    },
  );
  return 'no member left';
}

/**
 * The second half: wait until the reshard asked for meanwhile has published its new layout (or
 * already finished, or was refused because another one runs), then start every member again.
 * The note says whether the coordinator listed the group as idle, waiting for it to drain.
 */
export async function startIdleGroup(cluster: ChaosCluster): Promise<string> {
  let waitedFor = false;
  await waitForNoProblems(
    async () => {
      const { resharding } = await cluster.routing();
      if (resharding === null) return null;
      if (resharding.idleGroups.some((g) => g.group === CHAOS_IDLE_GROUP)) waitedFor = true;
      return resharding.state === 'preparing' ? 'reshard still preparing' : null;
    },
    {
      timeoutMs: 30_000,
      intervalMs: 100,
      message: 'the new layout to be published',
      retryErrors: true,
    },
  );
  await Promise.all(CHAOS_IDLE_MEMBERS.map((name) => cluster.startMember(name, CHAOS_IDLE_GROUP)));
  return waitedFor
    ? 'the reshard listed the group as idle; its members are back'
    : 'its members are back';
}
