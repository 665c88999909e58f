import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';
import type { GroupStore } from '../store/group-store.js';
import { foldEvents, type ProjectedGroup } from './group-projection.js';
import { ProjectionGapError, ProjectionUnavailableError } from './projection.errors.js';
import type { ProjectionStore } from './projection-store.js';

/** Events read per `XRANGE` page while folding. */
const PAGE = 1000;

/**
 * Keeps each group's projection in step with its event log: {@link catchUp} folds the events
 * written since the stored projection (one short `XRANGE` when nothing happened), {@link rebuild}
 * drops it and folds the whole retained log from its first checkpoint. Safe to run on every
 * replica at once (the store's compare-and-set never moves a projection backwards).
 */
export class GroupProjector {
  constructor(
    private readonly store: GroupStore,
    private readonly projections: ProjectionStore,
  ) {}

  /**
   * The group's projection, brought up to date with its log (rebuilt when the log cannot be
   * folded on). `null` when the group does not exist.
   *
   * @throws ProjectionUnavailableError when the log cannot be folded at all (see its doc)
   */
  async catchUp(groupId: string): Promise<ProjectedGroup | null> {
    const stored = await this.projections.get(groupId);
    if (stored === null) return this.rebuild(groupId);
    const before = await this.store.version(groupId);
    if (before === 0) {
      await this.projections.drop(groupId);
      return null;
    }
    let next: ProjectedGroup | null;
    try {
      next = await this.fold(groupId, stored);
    } catch (error) {
      if (error instanceof ProjectionGapError) return this.rebuild(groupId);
      throw error;
    }
    // Versions only grow and every commit is in the log before its version is visible, so a
    // projection that fits the log is at least at `before` and at most at the version now.
    if (
      next === null ||
      next.version < before ||
      (next.version > before && next.version > (await this.store.version(groupId)))
    ) {
      return this.rebuild(groupId);
    }
    if (next.lastEventId !== stored.lastEventId)
      await this.projections.put(groupId, next, stored.lastEventId);
    return next;
  }

  /**
   * Drops the projection and folds it again from the event log alone. `null` when the group
   * does not exist (no log).
   *
   * @throws ProjectionUnavailableError when the retained log holds no starting point
   */
  async rebuild(groupId: string): Promise<ProjectedGroup | null> {
    await this.projections.drop(groupId);
    const first = await this.store.events(groupId, undefined, 1);
    if (first.length === 0) return null;
    const projection = await this.fold(groupId, null);
    if (projection === null) {
      throw new ProjectionUnavailableError(
        groupId,
        "the retained log holds no GROUP_CHECKPOINT and does not start with the group's first change",
      );
    }
    await this.projections.put(groupId, projection, '*');
    return projection;
  }

  private async fold(groupId: string, from: ProjectedGroup | null): Promise<ProjectedGroup | null> {
    let projection = from;
    let after = from?.lastEventId;
    for (;;) {
      const page: GroupEventEntry[] = await this.store.events(groupId, after, PAGE);
      if (page.length === 0) return projection;
      projection = foldEvents(groupId, projection, page);
      after = (page[page.length - 1] as GroupEventEntry).id;
      if (page.length < PAGE) return projection;
    }
  }
}
