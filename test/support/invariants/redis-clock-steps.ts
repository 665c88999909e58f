import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';

/** A step of Redis's wall clock a test made, as the event-log mapping needs it. */
export interface RedisClockStep {
  /** The machine's wall-clock time (ms) the step was made at. */
  readonly at: number;
  /** Redis's clock from then on: the machine's plus this (ms). */
  readonly offsetMs: number;
  /**
   * Per group: its event log's last id read just before the step, and just after (`null`: the
   * log was empty). Events up to `before` were stamped before the step, events past `after`
   * after it; those in between at the step, within the time the two reads took.
   */
  readonly lastEventIds: Readonly<
    Record<string, { readonly before: string | null; readonly after: string | null }>
  >;
}

/**
 * `events` (a group's log, oldest first) with each `at` moved onto the machine's wall clock:
 * an event is stamped with Redis's `TIME`, which `steps` moved away from the machine's clock
 * that the members' records use. Which step an event came after is read off its id (stream ids
 * only grow, whatever the clock does), not off its time, which a step back makes ambiguous.
 */
export function eventsOnMachineClock(
  events: readonly GroupEventEntry[],
  steps: readonly RedisClockStep[],
  group: string,
): GroupEventEntry[] {
  if (steps.length === 0) return [...events];
  return events.map((event) => {
    let offsetMs = 0;
    for (const step of steps) {
      const ids = step.lastEventIds[group];
      if (ids === undefined) {
        throw new Error(`a Redis clock step at ${step.at} did not record group ${group}'s log`);
      }
      if (idAtMost(event.id, ids.before)) break;
      if (!idAtMost(event.id, ids.after)) {
        offsetMs = step.offsetMs;
        continue;
      }
      return { ...event, at: new Date(step.at).toISOString() };
    }
    return offsetMs === 0
      ? event
      : { ...event, at: new Date(Date.parse(event.at) - offsetMs).toISOString() };
  });
}

/** Whether stream id `id` is at most `bound` (`null`: below every id). */
function idAtMost(id: string, bound: string | null): boolean {
  if (bound === null) return false;
  const [ms, seq] = parts(id);
  const [boundMs, boundSeq] = parts(bound);
  return ms < boundMs || (ms === boundMs && seq <= boundSeq);
}

function parts(id: string): [bigint, bigint] {
  const [ms, seq] = id.split('-');
  return [BigInt(ms ?? '0'), BigInt(seq ?? '0')];
}
