import type { Redis } from 'ioredis';
import {
  KeySpace,
  ownerField,
  parseFenceToken,
  shardMetaKey,
} from '@redis-stream-coordinator/nestjs/protocol';
import { decodeMember } from '../../../apps/coordinator/src/store/group-records.js';
import type { OwnershipMonitor } from './ownership-monitor.js';
import { parseShardRef, type ShardRef } from './shard-set.js';

/** Options of a {@link CommittedStateSampler}. */
export interface CommittedStateSamplerOptions {
  readonly redis: Redis;
  readonly prefix: string;
  readonly groupId: string;
  /** Every shard whose fence is checked. */
  readonly shards: readonly ShardRef[];
  /** The members' own view, compared with Redis at every sample. */
  readonly monitor: OwnershipMonitor;
}

/**
 * Samples what Redis holds for a group — the committed member records and every shard's fence
 * owner field (`owner:<group>` in the shard's meta hash) — in one MULTI/EXEC, so each sample is one
 * instant, and checks it against the members' own view taken just before and just after:
 *
 * 1. committed state: no shard in two members' `assigned ∪ pendingRevocation`;
 * 2. the group epoch, the group version and every shard's fence version never go back;
 * 3. a shard a member holds in its own view (unchanged across the sample) is held by that member in
 *    the committed state, and its fence names that member (the coordinator never granted it to
 *    anyone else, and fences are written before responses);
 * 4. a member whose leave was acknowledged is absent from the committed state until it rejoins.
 */
export class CommittedStateSampler {
  readonly violations: string[] = [];
  samples = 0;
  /** Highest group epoch seen. */
  groupEpoch = 0;
  private version = 0;
  private readonly fenceVersions = new Map<ShardRef, number>();
  private readonly keys: KeySpace;
  private running: Promise<void> | null = null;
  private stopped = false;

  constructor(private readonly options: CommittedStateSamplerOptions) {
    this.keys = new KeySpace(options.prefix);
  }

  /** Samples every `periodMs` until {@link stop}. */
  start(periodMs: number): void {
    this.stopped = false;
    const loop = async (): Promise<void> => {
      while (!this.stopped) {
        await this.sampleOnce().catch((error: unknown) => {
          this.violations.push(`sampler failed: ${String(error)}`);
        });
        await new Promise((r) => setTimeout(r, periodMs));
      }
    };
    this.running = loop();
  }

  /** Stops sampling (after one last sample). */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
    await this.sampleOnce();
  }

  /** Takes one sample and checks it. */
  async sampleOnce(): Promise<void> {
    const { redis, groupId, shards, monitor } = this.options;
    const before = monitor.snapshot();
    const multi = redis
      .multi()
      .hgetall(this.keys.groupMembersKey(groupId))
      .hmget(this.keys.groupMetaKey(groupId), 'groupEpoch', 'version');
    for (const ref of shards) {
      const { stream, shard } = parseShardRef(ref);
      multi.hget(shardMetaKey(this.keys.shardKey(stream, shard)), ownerField(groupId));
    }
    const replies = await multi.exec();
    const after = monitor.snapshot();
    if (!replies) throw new Error('MULTI was aborted');
    for (const [error] of replies) if (error) throw error;
    this.samples++;
    const at = new Date().toISOString();
    const fail = (message: string): void => {
      if (this.violations.length < 200) this.violations.push(`${at} ${message}`);
    };

    // 1. committed state: one holder per shard
    const membersHash = (replies[0]?.[1] ?? {}) as Record<string, string>;
    const committedHolder = new Map<ShardRef, string>();
    const committedMembers = new Set<string>();
    for (const json of Object.values(membersHash)) {
      const m = decodeMember(json);
      committedMembers.add(m.memberId);
      for (const source of [m.assigned, m.pendingRevocation]) {
        for (const [stream, ids] of source) {
          for (const id of ids) {
            const ref = `${stream}/${id}`;
            const other = committedHolder.get(ref);
            if (other !== undefined && other !== m.memberId) {
              fail(`committed state: ${ref} held by both ${other} and ${m.memberId}`);
            }
            committedHolder.set(ref, m.memberId);
          }
        }
      }
    }

    // 2. monotonic epochs and versions
    const [epochRaw, versionRaw] = (replies[1]?.[1] ?? []) as Array<string | null>;
    const epoch = Number(epochRaw ?? 0);
    const version = Number(versionRaw ?? 0);
    if (epoch < this.groupEpoch) fail(`group epoch went back from ${this.groupEpoch} to ${epoch}`);
    if (version < this.version) fail(`group version went back from ${this.version} to ${version}`);
    this.groupEpoch = Math.max(this.groupEpoch, epoch);
    this.version = Math.max(this.version, version);
    const fenceOwner = new Map<ShardRef, string>();
    shards.forEach((ref, i) => {
      const token = replies[2 + i]?.[1] as string | null;
      if (token === null || token === undefined) return;
      const parsed = parseFenceToken(token);
      if (!parsed) {
        fail(`fence of ${ref} is malformed: ${token}`);
        return;
      }
      const last = this.fenceVersions.get(ref) ?? 0;
      if (parsed.version < last) fail(`fence of ${ref} went back from version ${last} to ${token}`);
      this.fenceVersions.set(ref, Math.max(last, parsed.version));
      if (parsed.memberId !== '') fenceOwner.set(ref, parsed.memberId);
    });

    // 3 and 4. the members' own view against Redis
    for (const [memberId, view] of after) {
      const earlier = before.get(memberId);
      if (!earlier || earlier.changes !== view.changes) continue; // changed during the sample
      if (view.left && committedMembers.has(memberId)) {
        fail(`${memberId} left (acknowledged) but is back in the committed state`);
      }
      for (const ref of view.held) {
        const holder = committedHolder.get(ref);
        if (holder !== memberId) {
          fail(
            `${memberId} holds ${ref} in its own view but the committed holder is ${holder ?? '(none)'}`,
          );
        }
        const fence = fenceOwner.get(ref);
        if (fence !== memberId)
          fail(`${memberId} holds ${ref} but its fence names ${fence ?? '(none)'}`);
      }
    }
  }
}
