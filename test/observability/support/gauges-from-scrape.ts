import { CoordinatorApi } from '../../support/coordinator-process.js';
import { parsePrometheusText, sampleValue } from '../../coordinator/support/prometheus-text.js';
import {
  type GroupGaugeValues,
  MEMBER_GAUGE_STATES,
  SHARD_GAUGE_STATUSES,
} from '../../../apps/coordinator/src/metrics/group-gauges.js';

/** The per-group gauge values of one group as the coordinator's `/metrics` reports them. */
export async function scrapedGauges(
  baseUrl: string,
  group: string,
): Promise<Omit<GroupGaugeValues, 'state' | 'group'>> {
  const res = await new CoordinatorApi(baseUrl, null).get<string>('/metrics');
  if (res.status !== 200) throw new Error(`/metrics answered ${res.status}`);
  const m = parsePrometheusText(res.body);
  const need = (name: string, labels: Record<string, string>): number => {
    const v = sampleValue(m, name, labels);
    if (v === undefined) throw new Error(`/metrics has no ${name} ${JSON.stringify(labels)}`);
    return v;
  };
  return {
    groupEpoch: need('rsc_coordinator_group_epoch', { group }),
    assignmentEpoch: need('rsc_coordinator_assignment_epoch', { group }),
    members: Object.fromEntries(
      MEMBER_GAUGE_STATES.map((state) => [
        state,
        need('rsc_coordinator_members', { group, state }),
      ]),
    ) as GroupGaugeValues['members'],
    shards: Object.fromEntries(
      SHARD_GAUGE_STATUSES.map((status) => [
        status,
        need('rsc_coordinator_shards', { group, status }),
      ]),
    ) as GroupGaugeValues['shards'],
    membersWithoutAssignment: need('rsc_coordinator_members_without_assignment', { group }),
  };
}
