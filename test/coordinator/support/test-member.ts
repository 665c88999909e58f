import type {
  HeartbeatRequest,
  HeartbeatResponse,
  StreamShards,
} from '@redis-stream-coordinator/nestjs/protocol';
import type { CoordinatorApi } from '../../support/coordinator-process.js';
import { describeGroup, type JoinOptions, joinRequest, ok } from './coordinator-fixture.js';

/**
 * A well-behaved member driven by hand: it adopts every epoch and assignment it is given and
 * acknowledges revocations at once (its `ownedShards` is always its latest assignment).
 */
export class TestMember {
  epoch = 0;
  owned: StreamShards[] = [];
  last: HeartbeatResponse | undefined;

  constructor(
    readonly api: CoordinatorApi,
    readonly group: string,
    readonly memberId: string,
    readonly streams: readonly string[],
    readonly options: JoinOptions = {},
  ) {}

  /** Joins (epoch 0, full request). */
  async join(): Promise<HeartbeatResponse> {
    return this.adopt(
      await ok(this.api, this.group, joinRequest(this.memberId, this.streams, this.options)),
    );
  }

  /** A heartbeat at the held epoch reporting the held shards (acknowledges any revocation). */
  async beat(extra: Partial<HeartbeatRequest> = {}): Promise<HeartbeatResponse> {
    return this.adopt(
      await ok(this.api, this.group, {
        memberId: this.memberId,
        memberEpoch: this.epoch,
        ownedShards: this.owned,
        ...(this.options.instanceId !== undefined ? { instanceId: this.options.instanceId } : {}),
        ...extra,
      }),
    );
  }

  /** Shard ids of `stream` the member holds. */
  shards(stream: string): number[] {
    return this.owned.find((e) => e.stream === stream)?.shards ?? [];
  }

  private adopt(res: HeartbeatResponse): HeartbeatResponse {
    this.last = res;
    this.epoch = res.memberEpoch;
    if (res.assignment)
      this.owned = res.assignment.shards.map((e) => ({ stream: e.stream, shards: [...e.shards] }));
    return res;
  }
}

/** Heartbeats every member in turn until the group is STABLE (bounded). */
export async function settle(
  api: CoordinatorApi,
  group: string,
  members: readonly TestMember[],
): Promise<void> {
  for (let round = 0; round < 10; round++) {
    for (const m of members) await m.beat();
    const described = await describeGroup(api, group);
    if (described.state === 'STABLE') return;
  }
  throw new Error(
    `group ${group} did not become STABLE: ${JSON.stringify(await describeGroup(api, group))}`,
  );
}
