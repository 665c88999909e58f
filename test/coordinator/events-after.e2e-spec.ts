import { beforeAll, describe, expect, it } from 'vitest';
import type { GroupEventEntry, ProtocolErrorBody } from '@redis-stream-coordinator/nestjs/protocol';
import { allEvents, joinRequest, ok, useCoordinator } from './support/coordinator-fixture.js';

/** The largest stream id part Redis accepts (2^64 - 1). */
const MAX_PART = '18446744073709551615';
const OVER_MAX = '18446744073709551616';

/**
 * `GET /v1/groups/{g}/events?after=`: an id Redis cannot take is bad input (400 naming `after`, no
 * 503 and no stack trace in the log), and the ids at the top of the range answer an empty page.
 */
describe('events after: stream ids at and past the 64-bit limits', () => {
  const fx = useCoordinator('events-after', { STREAMS: 'orders:2', SESSION_TIMEOUT_MS: '600000' });
  let events: GroupEventEntry[] = [];

  beforeAll(async () => {
    await ok(fx.member(), 'g', joinRequest('m1', ['orders']));
    events = await allEvents(fx.member(), 'g');
    expect(events.length).toBeGreaterThan(0);
  });

  for (const after of [
    `${OVER_MAX}-0`,
    `0-${OVER_MAX}`,
    `99999999999999999999-0`,
    `1-99999999999999999999`,
  ]) {
    it(`refuses after=${after} with 400 INVALID_REQUEST naming after`, async () => {
      const res = await fx.member().get<ProtocolErrorBody>(`/v1/groups/g/events?after=${after}`);
      expect({ status: res.status, code: res.body.error?.code }, JSON.stringify(res.body)).toEqual({
        status: 400,
        code: 'INVALID_REQUEST',
      });
      expect(res.body.error.message).toContain('after');
      expect(res.body.error.message).toContain(MAX_PART);
    });
  }

  for (const after of [`${MAX_PART}-${MAX_PART}`, `${MAX_PART}-0`]) {
    it(`answers after=${after} with an empty page (nothing comes after it)`, async () => {
      const res = await fx
        .member()
        .get<{ events: GroupEventEntry[] }>(`/v1/groups/g/events?after=${after}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.events).toEqual([]);
    });
  }

  it('ids below the first event page from the start, and the log holds no Redis error', async () => {
    for (const after of ['0-0', `1-${MAX_PART}`]) {
      const res = await fx
        .member()
        .get<{ events: GroupEventEntry[] }>(`/v1/groups/g/events?after=${after}`);
      expect(res.status).toBe(200);
      expect(res.body.events.map((e) => e.id)).toEqual(events.map((e) => e.id));
    }
    expect(fx.coordinator().output()).not.toMatch(/stream ID|start ID|ReplyError/i);
  });
});
