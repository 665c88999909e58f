import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import { GroupState } from '../core/group-state.js';
import { decodeMember, decodeTarget } from '../store/group-records.js';
import type { StateChangeData } from '../store/group-store.js';
import { ProjectionGapError } from './projection.errors.js';

/**
 * A group as rebuilt from its event log alone: the group-level fields and the stored form of
 * every member record and target (exactly what the store holds, see `group-records.ts`), plus
 * where in the log it stands. Plain JSON, so it is stored as is in the `…:projection` key.
 */
export interface ProjectedGroup {
  readonly groupId: string;
  /** The group version after the last change folded in. */
  readonly version: number;
  /** Id of the last event folded in (any type). */
  readonly lastEventId: string;
  /** Time of that event (coordinator clock, ms). */
  readonly lastEventAt: number;
  /** Events folded in since the projection was (re)built from scratch. */
  readonly eventsFolded: number;
  readonly meta: {
    readonly groupEpoch: number;
    readonly assignmentEpoch: number;
    readonly createdAt: number;
    readonly metadataSignature: string;
  };
  /** memberId → stored member record (JSON). */
  readonly members: Readonly<Record<string, string>>;
  /** memberId → stored target (JSON). */
  readonly targets: Readonly<Record<string, string>>;
}

/** `data` of a `GROUP_CHECKPOINT` event, as the commit script writes it. */
interface CheckpointData {
  readonly v: number;
  readonly meta: Readonly<Record<string, string | false>>;
  /** `HGETALL` replies: flat `[field, value, …]` (an empty one encodes as `{}`). */
  readonly m: readonly string[] | Record<string, never>;
  readonly t: readonly string[] | Record<string, never>;
}

function flatToRecord(flat: CheckpointData['m']): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out[flat[i] as string] = flat[i + 1] as string;
  return out;
}

function num(value: string | false | undefined): number {
  return typeof value === 'string' ? Number(value) : 0;
}

/**
 * Folds one event into a projection. `GROUP_CHECKPOINT` starts (or re-bases) it on a full
 * snapshot; `GROUP_STATE_CHANGED` applies one commit, which must be the next version (else
 * {@link ProjectionGapError}); other events only move the position. Before the first checkpoint
 * (`projection` null) only a group's very first change (version 1) can start a projection;
 * anything else is skipped. Pure.
 */
export function foldEvent(
  groupId: string,
  projection: ProjectedGroup | null,
  event: GroupEventEntry,
): ProjectedGroup | null {
  const at = Date.parse(event.at);
  if (event.type === 'GROUP_CHECKPOINT') {
    const data = event.data as unknown as CheckpointData;
    if (projection && data.v < projection.version) return advance(projection, event, at);
    return {
      groupId,
      version: data.v,
      lastEventId: event.id,
      lastEventAt: at,
      eventsFolded: (projection?.eventsFolded ?? 0) + 1,
      meta: {
        groupEpoch: num(data.meta.groupEpoch),
        assignmentEpoch: num(data.meta.assignmentEpoch),
        createdAt: num(data.meta.createdAt),
        metadataSignature:
          typeof data.meta.metadataSignature === 'string' ? data.meta.metadataSignature : '',
      },
      members: flatToRecord(data.m),
      targets: flatToRecord(data.t),
    };
  }
  if (event.type === 'GROUP_STATE_CHANGED') {
    const data = event.data as unknown as StateChangeData;
    if (projection === null) {
      if (data.v !== 1) return null;
      projection = {
        groupId,
        version: 0,
        lastEventId: '',
        lastEventAt: at,
        eventsFolded: 0,
        meta: { ...data.meta },
        members: {},
        targets: {},
      };
    }
    if (data.v <= projection.version) return advance(projection, event, at);
    if (data.v !== projection.version + 1) {
      throw new ProjectionGapError(groupId, projection.version + 1, data.v, event.id);
    }
    const members = { ...projection.members };
    for (const [id, json] of data.m) members[id] = json;
    for (const id of data.md) delete members[id];
    const targets = { ...projection.targets };
    for (const [id, json] of data.t) targets[id] = json;
    for (const id of data.td) delete targets[id];
    return {
      groupId,
      version: data.v,
      lastEventId: event.id,
      lastEventAt: at,
      eventsFolded: projection.eventsFolded + 1,
      meta: { ...data.meta },
      members,
      targets,
    };
  }
  return projection === null ? null : advance(projection, event, at);
}

function advance(projection: ProjectedGroup, event: GroupEventEntry, at: number): ProjectedGroup {
  return {
    ...projection,
    lastEventId: event.id,
    lastEventAt: at,
    eventsFolded: projection.eventsFolded + 1,
  };
}

/** Folds a page of events, oldest first. */
export function foldEvents(
  groupId: string,
  projection: ProjectedGroup | null,
  events: readonly GroupEventEntry[],
): ProjectedGroup | null {
  let p = projection;
  for (const e of events) p = foldEvent(groupId, p, e);
  return p;
}

/** The projection as the core's {@link GroupState} (derived indexes rebuilt). */
export function projectedGroupState(projection: ProjectedGroup): GroupState {
  return GroupState.fromRecords(
    projection.groupId,
    { ...projection.meta, version: projection.version, commitId: '' },
    Object.values(projection.members).map(decodeMember),
    Object.entries(projection.targets).map(([id, json]) => [id, decodeTarget(json)] as const),
  );
}
