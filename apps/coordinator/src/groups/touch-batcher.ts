import type { GroupState } from '../core/group-state.js';
import type { WriteResult } from '../store/group-store.js';

/** The store call the batcher makes: record heartbeats of `memberIds` if the group is still as in `state`. */
export type TouchMany = (state: GroupState, memberIds: readonly string[]) => Promise<WriteResult>;

interface Batch {
  readonly state: GroupState;
  readonly version: number;
  readonly createdAt: number;
  readonly commitId: string;
  readonly memberIds: string[];
  readonly done: Promise<WriteResult>;
  resolve(result: WriteResult): void;
  reject(error: unknown): void;
}

interface GroupTouches {
  readonly pending: Batch[];
  running: Promise<void> | null;
}

/**
 * Coalesces the Redis writes of heartbeats that changed nothing ("touches": the member's last
 * heartbeat time, under a compare-and-set on the group version). Per group, at most one touch
 * call is in flight; touches that arrive meanwhile for the same group version are sent together
 * in the next call, so one round trip records many heartbeats. With no load a touch is sent at
 * once (no added latency).
 *
 * A state change must call {@link drain} before it commits: every heartbeat answered before it
 * is then recorded first (a heartbeat racing a session expiry still wins, as without batching).
 */
export class TouchBatcher {
  private readonly groups = new Map<string, GroupTouches>();

  constructor(private readonly touchMany: TouchMany) {}

  /** Records a heartbeat of `memberId` against `state` (batched); resolves with the write's result. */
  touch(state: GroupState, memberId: string): Promise<WriteResult> {
    let group = this.groups.get(state.groupId);
    if (!group) {
      group = { pending: [], running: null };
      this.groups.set(state.groupId, group);
    }
    const last = group.pending.at(-1);
    if (
      last &&
      last.version === state.meta.version &&
      last.createdAt === state.meta.createdAt &&
      last.commitId === state.meta.commitId
    ) {
      last.memberIds.push(memberId);
      return last.done;
    }
    let resolve: (result: WriteResult) => void = () => undefined;
    let reject: (error: unknown) => void = () => undefined;
    const done = new Promise<WriteResult>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    group.pending.push({
      state,
      version: state.meta.version,
      createdAt: state.meta.createdAt,
      commitId: state.meta.commitId,
      memberIds: [memberId],
      done,
      resolve,
      reject,
    });
    if (group.running === null) group.running = this.run(state.groupId, group);
    return done;
  }

  /** Resolves once no touch of `groupId` is queued or in flight (never rejects). */
  drain(groupId: string): Promise<void> {
    return this.groups.get(groupId)?.running ?? Promise.resolve();
  }

  private async run(groupId: string, group: GroupTouches): Promise<void> {
    // start on a later tick, so the requests already parsed in this one join the first batch
    await Promise.resolve();
    for (let batch = group.pending.shift(); batch; batch = group.pending.shift()) {
      try {
        batch.resolve(await this.touchMany(batch.state, batch.memberIds));
      } catch (error) {
        batch.reject(error);
      }
    }
    group.running = null;
    if (this.groups.get(groupId) === group) this.groups.delete(groupId);
  }
}
