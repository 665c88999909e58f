import { describe, expect, it } from 'vitest';
import type { MemberRuntimeStatus } from '../runtime/member-runtime.js';
import { MemberRuntimeEvents } from '../runtime/member-runtime-events.js';
import {
  checkAssignment,
  checkCoordinator,
  checkFencing,
  checkReaders,
  type MemberHealthInput,
  type ReaderView,
} from './member-health-evaluator.js';
import { ReaderHealthTracker } from './reader-health-tracker.js';

const orders0 = { stream: 'orders', shard: 0, key: 'rsc:{orders:0}' };
const orders1 = { stream: 'orders', shard: 1, key: 'rsc:{orders:1}' };

function status(fields: Partial<MemberRuntimeStatus> = {}): MemberRuntimeStatus {
  return {
    phase: 'active',
    memberId: 'm',
    memberEpoch: 3,
    group: 'g',
    assigned: [orders0],
    held: [orders0],
    lastHeartbeatOkAt: 1000,
    heartbeatIntervalMs: 1000,
    sessionTimeoutMs: 10_000,
    lastError: null,
    ...fields,
  };
}

function reader(
  shard: { stream: string; shard: number },
  fields: Partial<ReaderView['reader']> = {},
): ReaderView {
  return {
    shard,
    stopping: false,
    reader: {
      status: 'reading',
      isStalled: () => false,
      lastProgressAt: 0,
      options: { watchdogGraceMs: 3000, reconnectBackoff: { maxDelayMs: 5000 } },
      ...fields,
    },
  };
}

function setup(s: MemberRuntimeStatus, readers: ReaderView[] = [reader(orders0)], now = 1500) {
  const events = new MemberRuntimeEvents();
  let current = s;
  const tracker = new ReaderHealthTracker(events, () => current);
  const input = (over: Partial<MemberHealthInput> = {}): MemberHealthInput => ({
    isMember: true,
    status: current,
    readers,
    tracker,
    now,
    requestTimeoutMs: 2000,
    rebalanceTimeoutMs: 60_000,
    options: {},
    ...over,
  });
  return { events, tracker, input, set: (next: MemberRuntimeStatus) => (current = next) };
}

describe('member health checks', () => {
  it('coordinator: down while joining, after a failed heartbeat, and when the last answer is too old', () => {
    expect(checkCoordinator(setup(status()).input()).status).toBe('up');
    expect(checkCoordinator(setup(status({ phase: 'joining' })).input()).data.reason).toMatch(
      /^joining the group/,
    );
    expect(checkCoordinator(setup(status({ lastError: 'ECONNREFUSED' })).input()).data.reason).toBe(
      'the last heartbeat failed: ECONNREFUSED',
    );
    // 2 × 1000 + 2000 = 4000 ms allowed.
    const stale = checkCoordinator(setup(status(), undefined, 1000 + 4001).input());
    expect(stale).toMatchObject({
      status: 'down',
      data: { reason: expect.stringMatching(/^no heartbeat answered for 4001 ms \(limit 4000 ms/) },
    });
    expect(checkCoordinator(setup(status()).input({ isMember: false }))).toEqual({
      status: 'up',
      data: { member: false },
    });
  });

  it('fencing: down after the coordinator fenced the member and after a shard loss, for the hold time', () => {
    const { events, input } = setup(status());
    expect(checkFencing(input()).status).toBe('up');
    events.emit('fenced', { code: 'FENCED_MEMBER_EPOCH' });
    const now = performance.now();
    expect(checkFencing(input({ now })).data.reason).toMatch(
      /^fenced by the coordinator \(FENCED_MEMBER_EPOCH\)/,
    );
    expect(checkFencing(input({ now: now + 5001 })).status).toBe('up');
    const other = setup(status());
    other.events
      .readerHooks(orders1)
      .lost?.({ code: 'FENCED', currentOwner: '9:other', message: 'x' });
    expect(checkFencing(other.input({ now: performance.now() })).data.reason).toMatch(
      /^shard orders\/1 lost to the data-plane fence \d+ ms ago \(the fence names 9:other\)/,
    );
  });

  it('readers: a watchdog timeout is down until a message is handled or the reader stays quiet long enough', () => {
    const { events, input } = setup(status());
    const hooks = events.readerHooks(orders0);
    hooks.watchdog?.();
    const t = performance.now();
    expect(checkReaders(input({ now: t })).data.reason).toMatch(
      /^orders\/0: Redis calls failing for \d+ ms \(1×\): a Redis call did not answer/,
    );
    // quiet window: backoff 5000 + grace 3000 + 500
    expect(checkReaders(input({ now: t + 8000 })).status).toBe('down');
    expect(checkReaders(input({ now: t + 9000 })).status).toBe('up');
    hooks.connectionError?.(new Error('ECONNRESET'));
    hooks.handled?.(1, {} as never);
    expect(checkReaders(input({ now: performance.now() })).status).toBe('up');
    const stalled = setup(status(), [
      reader(orders0, { isStalled: () => true, lastProgressAt: 0, status: 'reading' }),
    ]);
    expect(checkReaders(stalled.input({ now: 12_000 })).data.reason).toBe(
      'orders/0 stalled: no progress for 12000 ms (reading)',
    );
  });

  it('assignment: degraded while converging, down past the grace period', () => {
    const s = status({ assigned: [orders0], held: [orders0, orders1] });
    const { input } = setup(s);
    const first = checkAssignment(input({ now: 100 }));
    expect(first).toMatchObject({ status: 'degraded', data: { revoking: ['orders/1'] } });
    expect(checkAssignment(input({ now: 100 + 15_001 })).data.reason).toMatch(
      /^not converged for 15001 ms \(grace 15000 ms\): revoked orders\/1 still settling/,
    );
    expect(checkAssignment(setup(status({ phase: 'self-fenced' })).input()).data.reason).toBe(
      'no assignment: the member is self-fenced',
    );
  });
});
