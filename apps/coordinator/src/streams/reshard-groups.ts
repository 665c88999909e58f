import type { GroupEvent } from '../core/group-event.js';
import type { GroupObservation } from '../core/streams/reshard-steps.js';
import type { GroupCoordinator } from '../groups/group-coordinator.js';
import type { GroupStore } from '../store/group-store.js';

/** What the reshard driver needs to know about (and tell) the consumer groups. */
export interface ReshardGroups {
  /** Every known group id. */
  listGroupIds(): Promise<string[]>;
  /** Whether `groupId` exists and subscribes to `stream`, and which of its shards it holds. */
  observe(groupId: string, stream: string): Promise<GroupObservation>;
  /** Appends reshard events to the group's event log (and re-evaluates the group). */
  recordEvents(groupId: string, events: readonly GroupEvent[]): Promise<void>;
}

/** {@link ReshardGroups} over the group coordinator: reads are authoritative (verified against Redis). */
export class CoordinatorReshardGroups implements ReshardGroups {
  constructor(
    private readonly coordinator: GroupCoordinator,
    private readonly store: GroupStore,
  ) {}

  listGroupIds(): Promise<string[]> {
    return this.store.listGroupIds();
  }

  async observe(groupId: string, stream: string): Promise<GroupObservation> {
    const { state, exists } = await this.coordinator.read(groupId);
    if (!exists) return { status: 'deleted', holds: new Set() };
    let subscribed = false;
    for (const m of state.members.values()) {
      if (m.subscribedStreams.includes(stream)) {
        subscribed = true;
        break;
      }
    }
    const holds = new Set<number>();
    for (const owner of state.owners.values()) if (owner.stream === stream) holds.add(owner.shard);
    return { status: subscribed ? 'active' : 'idle', holds };
  }

  recordEvents(groupId: string, events: readonly GroupEvent[]): Promise<void> {
    return this.coordinator.recordStreamEvents(groupId, events);
  }
}
