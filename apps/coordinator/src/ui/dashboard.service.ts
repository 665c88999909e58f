import { Inject, Injectable } from '@nestjs/common';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import type {
  GroupListing,
  KeySpace,
  StreamRouting,
} from '@redis-stream-coordinator/nestjs/protocol';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { CoordinatorError } from '../core/coordinator-error.js';
import type { GroupState } from '../core/group-state.js';
import { describeGroup, listGroup } from '../groups/group-describer.js';
import type { GroupCoordinator } from '../groups/group-coordinator.js';
import { GROUP_COORDINATOR } from '../groups/groups.tokens.js';
import { projectedGroupState } from '../projections/group-projection.js';
import type { GroupProjector } from '../projections/group-projector.js';
import { ProjectionUnavailableError } from '../projections/projection.errors.js';
import { GROUP_PROJECTOR } from '../projections/projections.tokens.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import type { GroupStore } from '../store/group-store.js';
import { GROUP_STORE, KEY_SPACE, STREAM_REGISTRY } from '../store/store.tokens.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import {
  type GroupDashboard,
  shardGrid,
  streamSummaries,
  summarize,
  TIMELINE_TYPES,
  withLag,
} from './dashboard-view.js';
import { recentEvents } from './recent-events.reader.js';
import { readShardLag } from './shard-lag.reader.js';

/** Entries of the event log read for the timeline (newest). */
const TIMELINE_WINDOW = 300;
/** Entries the timeline shows at most. */
const TIMELINE_MAX = 80;

/** What the dashboard's overview shows. */
export interface DashboardOverview {
  readonly groups: GroupListing[];
  readonly streams: Array<
    Pick<StreamRouting, 'stream' | 'routingEpoch' | 'resharding'> & { shards: number }
  >;
}

/**
 * The data behind `/ui`: groups as rebuilt from their event logs (the monitoring projection,
 * caught up on every read; the live records when a log cannot be folded), shard ownership with
 * per-shard lag and pending from `XINFO GROUPS`, the rebalance timeline from the log, and
 * reshard progress from the stream catalog.
 */
@Injectable()
export class DashboardService {
  constructor(
    @Inject(GROUP_PROJECTOR) private readonly projector: GroupProjector,
    @Inject(GROUP_COORDINATOR) private readonly coordinator: GroupCoordinator,
    @Inject(GROUP_STORE) private readonly store: GroupStore,
    @Inject(STREAM_REGISTRY) private readonly registry: StreamRegistry,
    @Inject(COORDINATOR_REDIS) private readonly redis: RedisConnection,
    @Inject(KEY_SPACE) private readonly keys: KeySpace,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  async overview(): Promise<DashboardOverview> {
    await this.registry.refresh();
    const groups: GroupListing[] = [];
    for (const id of await this.store.listGroupIds()) {
      const g = await this.state(id);
      if (g) groups.push(listGroup(g.state));
    }
    const streams = this.registry.list().map((r) => {
      const routing = this.registry.routing(r);
      return {
        stream: routing.stream,
        routingEpoch: routing.routingEpoch,
        shards: routing.shards.length,
        resharding: routing.resharding,
      };
    });
    return { groups, streams };
  }

  async group(groupId: string): Promise<GroupDashboard> {
    await this.registry.refresh();
    const g = await this.state(groupId);
    if (!g) throw new CoordinatorError('GROUP_ID_NOT_FOUND', `group "${groupId}" does not exist`);
    const [lastSeen, events] = await Promise.all([
      this.store.lastSeen(groupId),
      recentEvents(this.redis, this.keys, groupId, TIMELINE_WINDOW),
    ]);
    const group = describeGroup(
      g.state,
      lastSeen,
      this.config.defaultAssignor,
      this.coordinator.rules.assignors,
    );
    const subscribed = [...new Set(group.members.flatMap((m) => m.subscribedStreams))].sort();
    const shardsByStream = new Map<string, readonly number[]>();
    const draining = new Set<string>();
    const routing = new Map<string, StreamRouting>();
    for (const stream of subscribed) {
      const record = this.registry.get(stream);
      if (!record) continue;
      routing.set(stream, this.registry.routing(record));
      shardsByStream.set(stream, this.registry.view(groupId, stream)?.shards ?? []);
      for (const s of record.shards) if (s.state === 'draining') draining.add(`${stream}/${s.id}`);
    }
    const rows = shardGrid(group, shardsByStream, draining);
    const lags = await readShardLag(
      this.redis,
      groupId,
      rows.map((r) => this.registry.shardKey(r.stream, r.shard)),
    );
    const timeline = events
      .filter((e) => TIMELINE_TYPES.has(e.type))
      .slice(-TIMELINE_MAX)
      .map((e) => ({
        id: e.id,
        at: e.at,
        type: e.type,
        groupEpoch: e.groupEpoch,
        summary: summarize(e),
      }));
    return {
      group,
      source: g.source,
      version: g.source === 'projection' ? g.state.meta.version : null,
      streams: streamSummaries(subscribed, routing),
      shards: withLag(rows, lags),
      timeline,
    };
  }

  /** The group as projected from its log, else (log not foldable) as live; `null`: no group. */
  private async state(
    groupId: string,
  ): Promise<{ state: GroupState; source: 'projection' | 'live' } | null> {
    try {
      const projection = await this.projector.catchUp(groupId);
      return projection ? { state: projectedGroupState(projection), source: 'projection' } : null;
    } catch (error) {
      if (!(error instanceof ProjectionUnavailableError)) throw error;
      const live = await this.coordinator.read(groupId);
      return live.exists ? { state: live.state, source: 'live' } : null;
    }
  }
}
