import type { HeartbeatResponse, StreamShards } from '@redis-stream-coordinator/nestjs/protocol';
import { joinRequest } from '../../coordinator/support/coordinator-fixture.js';
import type { InProcessCoordinator } from '../../coordinator/support/in-process-coordinator.js';

/** One entry a {@link ConsumingMember} read and acked. */
export interface ConsumedEntry {
  readonly shard: number;
  readonly key: string;
  readonly payload: string;
}

/**
 * A member that consumes (reads and acks) its shards directly and acknowledges revocations at
 * once: one heartbeat per {@link cycle}, then one read of at most `count` entries per owned shard.
 */
export class ConsumingMember {
  epoch = 0;
  owned: StreamShards[] = [];
  consumed = 0;
  /** Every entry read and acked, in the order it was handled. */
  readonly entries: ConsumedEntry[] = [];

  constructor(
    private readonly c: InProcessCoordinator,
    readonly group: string,
    readonly stream: string,
    private readonly count = 1000,
  ) {}

  /** Heartbeats (joining first), then reads and acks each owned shard once. */
  async cycle(): Promise<void> {
    await this.beat();
    for (const id of this.shards()) await this.consume(id);
  }

  /** One heartbeat (a join the first time); keeps the assignment it is given. */
  async beat(): Promise<void> {
    await this.c.registry.refresh();
    const res = (await this.c.coordinator.heartbeat(
      this.group,
      this.epoch === 0
        ? joinRequest('m1', [this.stream])
        : {
            memberId: 'm1',
            memberEpoch: this.epoch,
            rebalanceTimeoutMs: 30_000,
            subscribedStreams: [this.stream],
            ownedShards: this.owned,
          },
      null,
    )) as HeartbeatResponse;
    this.epoch = res.memberEpoch;
    if (res.assignment)
      this.owned = res.assignment.shards.map((e) => ({ stream: e.stream, shards: [...e.shards] }));
  }

  /** The shards of the stream it owns now. */
  shards(): number[] {
    return this.owned.find((e) => e.stream === this.stream)?.shards ?? [];
  }

  /** Reads and acks up to `count` entries of shard `id` (creating its consumer group at 0). */
  async consume(id: number): Promise<void> {
    const key = this.c.keys.shardKey(this.stream, id);
    await this.c.redis.xgroup('CREATE', key, this.group, '0', 'MKSTREAM').catch(() => undefined);
    const reply = (await this.c.redis.xreadgroup(
      'GROUP',
      this.group,
      'm1',
      'COUNT',
      this.count,
      'STREAMS',
      key,
      '>',
    )) as Array<[string, Array<[string, string[]]>]> | null;
    const read = reply?.[0]?.[1] ?? [];
    for (const [, fields] of read) {
      const f = new Map<string, string>();
      for (let i = 0; i + 1 < fields.length; i += 2)
        f.set(fields[i] as string, fields[i + 1] as string);
      this.entries.push({ shard: id, key: f.get('key') ?? '', payload: f.get('payload') ?? '' });
    }
    const ids = read.map(([entryId]) => entryId);
    if (ids.length > 0) this.consumed += await this.c.redis.xack(key, this.group, ...ids);
  }
}
