import type { ShardReaderStatus } from '../data-plane/shard-reader.types.js';
import type { MemberRuntimeStatus } from '../runtime/member-runtime.js';
import type { MemberHealthOptions } from './member-health-options.interface.js';
import type { ReaderHealthTracker } from './reader-health-tracker.js';

/** The outcome of one member check: terminus status plus the data shown with it. */
export interface MemberCheckOutcome {
  readonly status: 'up' | 'degraded' | 'down';
  /** `reason` is set for `degraded` and `down`. */
  readonly data: Record<string, unknown>;
}

/** One reader as the checks see it. */
export interface ReaderView {
  readonly shard: { readonly stream: string; readonly shard: number };
  readonly stopping: boolean;
  readonly reader: {
    readonly status: ShardReaderStatus;
    isStalled(now?: number): boolean;
    readonly lastProgressAt: number;
    readonly options: {
      readonly watchdogGraceMs: number;
      readonly reconnectBackoff: { readonly maxDelayMs: number };
    };
  };
}

/** Everything one evaluation reads. */
export interface MemberHealthInput {
  readonly isMember: boolean;
  readonly status: MemberRuntimeStatus;
  readonly readers: readonly ReaderView[];
  readonly tracker: ReaderHealthTracker;
  readonly now: number;
  readonly requestTimeoutMs: number;
  readonly rebalanceTimeoutMs: number;
  readonly options: MemberHealthOptions;
}

const up = (data: Record<string, unknown> = {}): MemberCheckOutcome => ({ status: 'up', data });
const down = (reason: string, data: Record<string, unknown> = {}): MemberCheckOutcome => ({
  status: 'down',
  data: { reason, ...data },
});
const ms = (n: number): number => Math.round(n);
const label = (s: { stream: string; shard: number }): string => `${s.stream}/${s.shard}`;

/** Default of {@link MemberHealthOptions.maxHeartbeatAgeMs}. */
function maxHeartbeatAge(input: MemberHealthInput): number {
  const { heartbeatIntervalMs, sessionTimeoutMs } = input.status;
  if (input.options.maxHeartbeatAgeMs !== undefined) return input.options.maxHeartbeatAgeMs;
  const interval = heartbeatIntervalMs ?? 3000;
  const bound = 2 * interval + input.requestTimeoutMs;
  return sessionTimeoutMs === null ? bound : Math.min(bound, 0.75 * sessionTimeoutMs);
}

function fencedHold(input: MemberHealthInput): number {
  return (
    input.options.fencedHoldMs ?? Math.max(5000, 2 * (input.status.heartbeatIntervalMs ?? 3000))
  );
}

/**
 * `coordinator`: the member is joined and its heartbeats are answered, recently. Down while
 * joining, when the last heartbeat failed, when the last answered one is too old, when the
 * coordinator refuses the member, while self-fenced and while leaving.
 */
export function checkCoordinator(input: MemberHealthInput): MemberCheckOutcome {
  if (!input.isMember) return up({ member: false });
  const s = input.status;
  const error = s.lastError ? `: ${s.lastError}` : '';
  switch (s.phase) {
    case 'idle':
    case 'joining':
      return down(`joining the group: no heartbeat answered yet${error}`);
    case 'failing':
      return down(`the coordinator refuses this member${error}`);
    case 'self-fenced':
      return down(`self-fenced: the coordinator did not answer before the session timeout${error}`);
    case 'leaving':
    case 'stopped':
      return down('leaving the group (shutting down)');
    default:
      break;
  }
  const age =
    s.lastHeartbeatOkAt === null ? Number.POSITIVE_INFINITY : input.now - s.lastHeartbeatOkAt;
  const limit = maxHeartbeatAge(input);
  const details = {
    memberId: s.memberId,
    memberEpoch: s.memberEpoch,
    heartbeatAgeMs: Number.isFinite(age) ? ms(age) : null,
  };
  if (s.lastError !== null) return down(`the last heartbeat failed: ${s.lastError}`, details);
  if (age > limit) {
    return down(
      `no heartbeat answered for ${ms(age)} ms (limit ${ms(limit)} ms, interval ${s.heartbeatIntervalMs ?? '?'} ms)`,
      details,
    );
  }
  return up(details);
}

/**
 * `fencing`: nothing fenced this member lately — not the coordinator (FENCED_MEMBER_EPOCH,
 * UNKNOWN_MEMBER_ID: it dropped every shard and rejoins), not itself (self-fenced), and no shard
 * was lost to the data-plane fence or waits for the fence to name it.
 */
export function checkFencing(input: MemberHealthInput): MemberCheckOutcome {
  if (!input.isMember) return up({ member: false });
  const hold = fencedHold(input);
  const since = input.now - hold;
  const fenced = input.tracker.lastFenced();
  if (input.status.phase === 'self-fenced')
    return down('self-fenced: stopped every shard until the coordinator answers');
  if (fenced && fenced.at >= since) {
    return down(
      `fenced by the coordinator (${fenced.code ?? 'unknown'}) ${ms(input.now - fenced.at)} ms ago: dropped every shard and rejoined`,
    );
  }
  const losses = input.tracker.lossesSince(since);
  if (losses.length > 0) {
    const l = losses[0] as (typeof losses)[number];
    return down(
      `shard ${label(l)} lost to the data-plane fence ${ms(input.now - l.at)} ms ago (the fence names ${l.owner ?? 'nobody'})`,
      {
        lost: losses.map(label),
      },
    );
  }
  const wait = input.options.fenceWaitMs ?? 5000;
  const waiting = input.readers.filter(
    (r) =>
      !r.stopping && r.reader.status === 'starting' && firstSeen(r, input.now) < input.now - wait,
  );
  if (waiting.length > 0) {
    return down(
      `shard ${label(waiting[0]?.shard as ReaderView['shard'])} has waited over ${wait} ms for the fence to name this member`,
      {
        waiting: waiting.map((r) => label(r.shard)),
      },
    );
  }
  return up();
}

/** When each reader was first seen starting (the reader does not expose its start time). */
const startingSeen = new WeakMap<object, number>();
function firstSeen(r: ReaderView, now: number): number {
  let at = startingSeen.get(r.reader);
  if (at === undefined) {
    at = now;
    startingSeen.set(r.reader, at);
  }
  return at;
}

/**
 * `assignment`: the member processes exactly what it was assigned. `degraded` while a revoked
 * shard is still settling (its handler runs) or a new one starts; `down` when that lasts past
 * the grace period, or when the member has no assignment at all (not active).
 */
export function checkAssignment(input: MemberHealthInput): MemberCheckOutcome {
  if (!input.isMember) return up({ member: false });
  const s = input.status;
  if (s.phase !== 'active') return down(`no assignment: the member is ${s.phase}`);
  const since = input.tracker.observe(input.now);
  const assigned = s.assigned.map(label).sort();
  const held = s.held.map(label).sort();
  const details = { memberEpoch: s.memberEpoch, assigned: assigned.length, held: held.length };
  if (since === null) return up(details);
  const revoking = held.filter((x) => !assigned.includes(x));
  const starting = assigned.filter((x) => !held.includes(x));
  const grace = input.options.convergenceGraceMs ?? Math.min(input.rebalanceTimeoutMs, 15_000);
  const what = [
    revoking.length ? `revoked ${revoking.join(', ')} still settling` : '',
    starting.length ? `assigned ${starting.join(', ')} not started` : '',
  ]
    .filter(Boolean)
    .join('; ');
  const age = input.now - since;
  if (age > grace)
    return down(`not converged for ${ms(age)} ms (grace ${grace} ms): ${what}`, {
      ...details,
      revoking,
      starting,
    });
  return {
    status: 'degraded',
    data: { reason: `converging for ${ms(age)} ms: ${what}`, ...details, revoking, starting },
  };
}

/**
 * `readers`: every owned shard's reader is alive — not stalled (no progress where one was due,
 * e.g. a blocking read that never came back), and not failing: a watchdog timeout (a Redis call,
 * such as the blocking read, that did not answer in time) or a Redis error counts until a message
 * is handled or the reader has had time to fail again (its backoff plus watchdog grace) and
 * did not.
 */
export function checkReaders(input: MemberHealthInput): MemberCheckOutcome {
  if (!input.isMember) return up({ member: false });
  const problems: string[] = [];
  let alive = 0;
  for (const r of input.readers) {
    if (r.stopping || r.reader.status === 'stopped' || r.reader.status === 'lost') continue;
    const name = label(r.shard);
    if (r.reader.isStalled(input.now)) {
      problems.push(
        `${name} stalled: no progress for ${ms(input.now - r.reader.lastProgressAt)} ms (${r.reader.status})`,
      );
      continue;
    }
    const failure = input.tracker.failure(r.shard.stream, r.shard.shard);
    if (failure) {
      const quiet =
        r.reader.options.reconnectBackoff.maxDelayMs + r.reader.options.watchdogGraceMs + 500;
      if (input.now - failure.lastAt > quiet) {
        input.tracker.clearFailure(r.shard.stream, r.shard.shard);
      } else {
        problems.push(
          `${name}: Redis calls failing for ${ms(input.now - failure.since)} ms (${failure.count}×): ${failure.message}`,
        );
        continue;
      }
    }
    alive++;
  }
  if (problems.length > 0) return down(problems[0] as string, { alive, failing: problems });
  return up({ alive });
}
