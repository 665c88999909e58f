import { isDeepStrictEqual } from 'node:util';
import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';
import type { GroupState } from '../core/group-state.js';
import type { StreamCatalog } from '../core/stream-catalog.js';
import { describeGroup } from '../groups/group-describer.js';
import { type GroupGaugeValues, groupGaugeValues } from '../metrics/group-gauges.js';
import type { GroupStore } from '../store/group-store.js';
import { projectedGroupState, type ProjectedGroup } from './group-projection.js';

/** The monitoring views of one group, as computed from one state. */
export interface GroupViews {
  readonly describe: DescribedGroup;
  readonly gauges: GroupGaugeValues;
}

/** The result of comparing a projection with the live state of its group. */
export interface ProjectionComparison {
  readonly groupId: string;
  readonly liveVersion: number;
  readonly projectedVersion: number;
  /** Human-readable differences; empty when the views are equal. */
  readonly differences: string[];
}

/** The describe view and the gauge values of a group state (lastSeen from the `seen` set). */
export function groupViews(
  state: GroupState,
  lastSeen: ReadonlyMap<string, number>,
  defaultAssignor: string,
  catalog: StreamCatalog,
): GroupViews {
  return {
    describe: describeGroup(state, lastSeen, defaultAssignor),
    gauges: groupGaugeValues(state, catalog),
  };
}

/**
 * Compares the views computed from a projection with those computed from the live records
 * (`GroupStore.load`). Both take `lastHeartbeatAt` from the same `seen` set: heartbeats that
 * change nothing are liveness, not state, and are not in the event log.
 */
export async function compareWithLive(
  store: GroupStore,
  projection: ProjectedGroup,
  catalog: StreamCatalog,
  defaultAssignor: string,
): Promise<ProjectionComparison> {
  const groupId = projection.groupId;
  const [loaded, lastSeen] = await Promise.all([store.load(groupId), store.lastSeen(groupId)]);
  const live = groupViews(loaded.state, lastSeen, defaultAssignor, catalog);
  const projected = groupViews(projectedGroupState(projection), lastSeen, defaultAssignor, catalog);
  const differences: string[] = [];
  if (!loaded.exists) differences.push('the group does not exist any more');
  if (loaded.state.meta.version !== projection.version) {
    differences.push(`version: live ${loaded.state.meta.version}, projected ${projection.version}`);
  }
  diff('describe', live.describe, projected.describe, differences);
  diff('gauges', live.gauges, projected.gauges, differences);
  return {
    groupId,
    liveVersion: loaded.state.meta.version,
    projectedVersion: projection.version,
    differences,
  };
}

function diff(path: string, live: unknown, projected: unknown, out: string[]): void {
  if (isDeepStrictEqual(live, projected)) return;
  if (live && projected && typeof live === 'object' && typeof projected === 'object') {
    const keys = new Set([...Object.keys(live), ...Object.keys(projected)]);
    for (const k of keys) {
      diff(
        `${path}.${k}`,
        (live as Record<string, unknown>)[k],
        (projected as Record<string, unknown>)[k],
        out,
      );
    }
    return;
  }
  out.push(`${path}: live ${JSON.stringify(live)}, projected ${JSON.stringify(projected)}`);
}
