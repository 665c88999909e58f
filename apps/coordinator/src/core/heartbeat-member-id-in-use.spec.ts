import { describe, expect, it } from 'vitest';
import { as, memberOf, refusedWith, settle } from '../../../../test/support/core-spec-helpers.js';
import {
  GroupSimulator,
  StaticCatalog,
  testRules,
} from '../../../../test/support/group-simulator.js';

/** m1 (run A) owns every shard of orders, STABLE. */
function group(): GroupSimulator {
  const sim = new GroupSimulator(new StaticCatalog({ orders: 4 }), testRules());
  sim.heartbeat(GroupSimulator.join('m1', ['orders'], { runId: 'run-a' }));
  settle(sim);
  expect(memberOf(sim, 'm1')).toMatchObject({
    runId: 'run-a',
    assigned: as({ orders: [0, 1, 2, 3] }),
  });
  return sim;
}

// Issue 17 part 4 item 3: one fixed member id in two live processes is refused, not shared.
describe('a join under a member id a live member of another run holds', () => {
  it('is refused with MEMBER_ID_IN_USE and changes nothing; the holder keeps its shards', () => {
    const sim = group();
    const code = refusedWith(sim, GroupSimulator.join('m1', ['orders'], { runId: 'run-b' }));
    expect(code).toBe('MEMBER_ID_IN_USE');
    expect(memberOf(sim, 'm1')).toMatchObject({
      runId: 'run-a',
      assigned: as({ orders: [0, 1, 2, 3] }),
    });
  });

  it('the same run rejoining (after a fence) is let in', () => {
    const sim = group();
    const { outcome } = sim.heartbeat(GroupSimulator.join('m1', ['orders'], { runId: 'run-a' }));
    expect(outcome).toBeDefined();
    expect(memberOf(sim, 'm1').runId).toBe('run-a');
  });

  it('once the holder left or expired, the other run joins', () => {
    const sim = group();
    sim.remove('m1', 'expiry');
    sim.heartbeat(GroupSimulator.join('m1', ['orders'], { runId: 'run-b' }));
    settle(sim);
    expect(memberOf(sim, 'm1')).toMatchObject({
      runId: 'run-b',
      assigned: as({ orders: [0, 1, 2, 3] }),
    });
  });

  it('a member that sends no run id (an older library) is not checked', () => {
    const sim = group();
    sim.heartbeat(GroupSimulator.join('m1', ['orders']));
    expect(memberOf(sim, 'm1').runId).toBe('run-a');
  });
});
