import { describe, expect, it } from 'vitest';
import { classifyEffects, type EffectRowCount } from './effects-check.js';
import type { ProducedMessage, RedisRollback } from './invariants/index.js';

// Pure checks of the exactly-once effect check on hand-made runs: every kind must be able to
// fail, and an entry Redis erased is told apart from an entry a member skipped.

const SNAPSHOT = 1_700_000_000_000;
const KILL = SNAPSHOT + 1000;
const rollback: RedisRollback = { snapshotAt: SNAPSHOT, killedAt: KILL };

function entry(shard: number, ms: number, seq = 0): ProducedMessage {
  return { key: `k${shard}`, seq: 0, shard, id: `${ms}-${seq}` };
}
function rows(...applied: Array<[ProducedMessage, number]>): EffectRowCount[] {
  return applied.map(([p, n]) => ({ shard: p.shard, entry_id: p.id, n }));
}

const before = entry(0, SNAPSHOT - 500);
const inWindow = entry(0, SNAPSHOT + 300);
const inWindow2 = entry(1, SNAPSHOT + 600, 2);
const afterRestart = entry(0, KILL + 2000);

describe('classifyEffects', () => {
  it('counts one row per produced entry as exactly once', () => {
    const report = classifyEffects(rows([before, 1], [afterRestart, 1]), {
      produced: [before, afterRestart],
    });
    expect(report).toMatchObject({
      rows: 2,
      appliedTwice: [],
      missing: [],
      unexpected: [],
      lostByRedis: 0,
    });
  });

  it('reports an entry with two rows as applied twice, and one with none as missing', () => {
    const report = classifyEffects(rows([before, 2]), { produced: [before, afterRestart] });
    expect(report.appliedTwice).toEqual([{ shard: 0, id: before.id, count: 2 }]);
    expect(report.missing).toEqual([{ shard: 0, id: afterRestart.id }]);
  });

  it('reports a row of an entry the producer never recorded as not produced', () => {
    const report = classifyEffects(rows([before, 1], [afterRestart, 1]), { produced: [before] });
    expect(report.unexpected).toEqual([{ shard: 0, id: afterRestart.id }]);
    expect(report.missing).toEqual([]);
  });

  it('leaves out dead-lettered entries without a row and counts those with one', () => {
    const report = classifyEffects(rows([inWindow, 1]), {
      produced: [before, inWindow],
      deadLettered: [before, inWindow],
    });
    expect(report.missing).toEqual([]);
    expect(report.deadLetteredButApplied).toBe(1);
  });

  it('counts an entry Redis erased before any member applied it as lost by Redis, not missing', () => {
    const report = classifyEffects(rows([before, 1], [afterRestart, 1]), {
      produced: [before, inWindow, inWindow2, afterRestart],
      redisRollbacks: [rollback],
      lostByRedis: [inWindow, inWindow2],
    });
    expect(report.missing).toEqual([]);
    expect(report.lostByRedis).toBe(2);
    expect(report.appliedBeforeLoss).toBe(0);
  });

  it('counts an erased entry applied before the loss once, and twice when it has two rows', () => {
    const once = classifyEffects(rows([inWindow, 1]), {
      produced: [inWindow],
      redisRollbacks: [rollback],
      lostByRedis: [inWindow],
    });
    expect(once).toMatchObject({ missing: [], appliedTwice: [], lostByRedis: 0 });
    expect(once.appliedBeforeLoss).toBe(1);
    const twice = classifyEffects(rows([inWindow, 2]), {
      produced: [inWindow],
      redisRollbacks: [rollback],
      lostByRedis: [inWindow],
    });
    expect(twice.appliedTwice).toEqual([{ shard: 0, id: inWindow.id, count: 2 }]);
  });

  it('still reports as missing an entry written after the restart and skipped as applied', () => {
    // the failure the offset row could cause if new ids fell at or before an applied one: the
    // entry exists in Redis, was delivered and acknowledged, and has no effect
    const report = classifyEffects(rows([inWindow, 1]), {
      produced: [inWindow, afterRestart],
      redisRollbacks: [rollback],
      lostByRedis: [inWindow],
    });
    expect(report.missing).toEqual([{ shard: 0, id: afterRestart.id }]);
  });

  it('does not let the lost list hide an entry outside every rollback window', () => {
    // a wrong lost list (a stream tail read too low, say) must not turn real misses into losses
    const report = classifyEffects([], {
      produced: [before, afterRestart, inWindow],
      redisRollbacks: [rollback],
      lostByRedis: [before, afterRestart, inWindow],
    });
    expect(report.missing).toEqual([
      { shard: 0, id: before.id },
      { shard: 0, id: afterRestart.id },
    ]);
    expect(report.lostByRedis).toBe(1);
    const noRollback = classifyEffects([], { produced: [inWindow], lostByRedis: [inWindow] });
    expect(noRollback.missing).toEqual([{ shard: 0, id: inWindow.id }]);
  });
});
