import { describe, expect, it } from 'vitest';
import type { HandledRecord } from '../support/invariants/index.js';
import {
  handledCopies,
  PublishCallLog,
  settlePublished,
  type TailEntry,
  type TailReader,
} from './harness/publish-calls.js';

// The chaos producer's bookkeeping (no Redis): which shard and id each message of a publish was
// written with, taken from the publish script calls its connection sent and their replies, and
// which messages it must publish again. Issue #20: in CI (seed 819528503, Node 24) the old
// bookkeeping guessed a message's shard from the routing before and after the call and searched
// the shard tails for it; a message Redis had answered but then lost (a "lose Redis's last
// writes" fault whose window held a reshard) was not found there and was published again under
// a new id, so the entry a member had handled before the loss was "handled but never produced".

const OLD0 = 't-chaos:{orders:0}';
const OLD3 = 't-chaos:{orders:3}';
const NEW12 = 't-chaos:{orders:12}';

const a = { key: 'k1', seq: 4 };
const b = { key: 'k2', seq: 7 };
const c = { key: 'k3', seq: 0 };

/** A tail reader over fixed shard contents (newest last), counting its reads. */
function tails(contents: Record<string, ReadonlyArray<[string, { key: string; seq: number }]>>) {
  const reads: string[] = [];
  const read: TailReader = async (shardKey, count) => {
    reads.push(shardKey);
    const entries = contents[shardKey] ?? [];
    return entries
      .slice(-count)
      .reverse()
      .map(([id, m]): TailEntry => [id, ['key', m.key, 'payload', JSON.stringify({ seq: m.seq })]]);
  };
  return { read, reads };
}

/** Sends `messages` to `shardKey` through `log` as the publisher would; returns the script args. */
function args(shardKey: string, messages: ReadonlyArray<{ key: string; seq: number }>): string[] {
  return [
    shardKey,
    '',
    '',
    '',
    ...messages.flatMap((m) => [m.key, JSON.stringify({ seq: m.seq }), '']),
  ];
}

describe('chaos producer: what a publish wrote', () => {
  it('records an answered write with its call shard and id, even when Redis lost it since', async () => {
    // The CI interleaving: attempt 1 (old routing) wrote a and b to old shard 0 and was answered;
    // shard 3 refused c (the reshard closed it); attempt 2 (new routing) sent c to new shard 12
    // and Redis died before answering. Redis then came back without its last writes: a and b
    // are in no tail, and neither is c.
    const log = new PublishCallLog('orders');
    const first = log.sent(args(OLD0, [a, b]));
    const stale = log.sent(args(OLD3, [c]));
    log.answered(first, ['1700000000000-0', '1700000000000-1']);
    log.failed(stale, new Error('STALE_ROUTING key=t-chaos:{orders:3} state=closed'));
    const lost = log.sent(args(NEW12, [c]));
    log.failed(lost, new Error('Connection is closed.'));
    const { read, reads } = tails({});

    const settled = await settlePublished([a, b, c], log.calls(), read, 1);

    expect(settled.written).toEqual([
      { message: a, shard: 0, id: '1700000000000-0' },
      { message: b, shard: 0, id: '1700000000000-1' },
    ]);
    // only c's outcome is unknown, and only on the shard its unanswered call went to
    expect(settled.rest).toEqual([c]);
    expect(reads).toEqual([NEW12]);
  });

  it('finds a message whose call got no answer at the tail of that call shard', async () => {
    const log = new PublishCallLog('orders');
    const call = log.sent(args(NEW12, [a, c]));
    log.failed(call, new Error('Command timed out'));
    // Redis applied the call: both entries are there, behind a later one of another producer run
    const { read } = tails({
      [NEW12]: [
        ['1700000000005-0', a],
        ['1700000000005-1', c],
        ['1700000000009-0', { key: 'k9', seq: 1 }],
      ],
    });

    const settled = await settlePublished([a, c], log.calls(), read, 1);

    expect(settled.written).toEqual([
      { message: a, shard: 12, id: '1700000000005-0' },
      { message: c, shard: 12, id: '1700000000005-1' },
    ]);
    expect(settled.rest).toEqual([]);
  });

  it('publishes again what no call wrote: refused, unanswered and absent, or never sent', async () => {
    const log = new PublishCallLog('orders');
    const refused = log.sent(args(OLD3, [a]));
    log.failed(refused, new Error('STALE_ROUTING key=t-chaos:{orders:3} state=closed'));
    const unanswered = log.sent(args(OLD0, [b]));
    log.failed(unanswered, new Error('Connection is closed.'));
    // b is on another shard than its call's: that is not b's write
    const { read, reads } = tails({ [OLD3]: [['1700000000001-0', b]] });

    const settled = await settlePublished([a, b, c], log.calls(), read, 1);

    expect(settled.written).toEqual([]);
    expect(settled.rest).toEqual([a, b, c]);
    expect(reads).toEqual([OLD0]);
  });

  it('keeps an unanswered message its shard no longer shows as possibly written', async () => {
    // The CI interleaving (seed 827865799, Node 20, a loaded machine): the call writing a and b
    // to old shard 1 ran at once, but its reply was read only after the 4 s command timeout;
    // meanwhile a reshard drained and removed shard 1, so the lookup found an empty tail. Both
    // are published again (at-least-once), and both copies may exist.
    const OLD1 = 't-chaos:{orders:1}';
    const log = new PublishCallLog('orders');
    const call = log.sent(args(OLD1, [a, b]));
    log.failed(call, new Error('Command timed out'));
    const refused = log.sent(args(OLD3, [c]));
    log.failed(refused, new Error('STALE_ROUTING key=t-chaos:{orders:3} state=closed'));
    const { read } = tails({});

    const settled = await settlePublished([a, b, c], log.calls(), read, 1);

    expect(settled.rest).toEqual([a, b, c]);
    const { sentAt, settledAt } = settled.unsettled[0] ?? { sentAt: 0, settledAt: 0 };
    expect(sentAt).toBe(call.sentAt);
    expect(settledAt).toBeGreaterThanOrEqual(sentAt);
    expect(settled.unsettled).toEqual([
      { message: a, shard: 1, sentAt, settledAt, round: 1 },
      { message: b, shard: 1, sentAt, settledAt, round: 1 },
    ]);
    // entry ids are Redis' clock: the call's writes lie between its send and its lookup
    const at = (ms: number, seq: number): string => `${ms}-${seq}`;
    const handling = (s: number, id: string, m = a, member = 'm1'): HandledRecord => ({
      m: member,
      st: 'orders',
      s,
      k: m.key,
      id,
      q: m.seq,
      d: 1,
      t0: 0,
      t1: 1,
    });
    // a member handled a's first copy on shard 1 (twice: two groups), the second on 9; b's copy;
    // c (never unsettled) on shard 1
    const handled = [
      handling(1, at(sentAt, 0)),
      handling(1, at(sentAt, 0), a, 'idle1'),
      handling(9, at(settledAt + 4000, 0)),
      handling(1, at(sentAt, 2), c),
      handling(1, at(sentAt, 1), b),
    ];
    const produced = [{ ...a, shard: 9, id: at(settledAt + 4000, 0) }];
    // (each copy in the round of the call that wrote it: the copies published again come later)
    expect(handledCopies(settled.unsettled, handled, produced)).toEqual([
      { ...a, shard: 1, id: at(sentAt, 0), round: 1 },
      { ...b, shard: 1, id: at(sentAt, 1), round: 1 },
    ]);
    // nothing unsettled: no copies
    expect(handledCopies([], handled, produced)).toEqual([]);
    // an entry stamped outside the call's send-to-lookup window is no write of it
    const outside = [handling(1, at(sentAt - 1000, 0)), handling(1, at(settledAt + 1000, 0))];
    expect(handledCopies(settled.unsettled, outside, [])).toEqual([]);
    // one copy per unsettled message: a second entry of a on shard 1 is left to the checker
    const two = [handling(1, at(sentAt, 0)), handling(1, at(sentAt, 5))];
    expect(handledCopies(settled.unsettled, two, [])).toEqual([
      { ...a, shard: 1, id: at(sentAt, 0), round: 1 },
    ]);
  });

  it('takes the publisher reply over a tail entry of the same message', async () => {
    const log = new PublishCallLog('orders');
    const call = log.sent(args(OLD0, [a]));
    log.answered(call, ['1700000000002-0']);
    const { read, reads } = tails({ [OLD0]: [['1700000000001-0', a]] });

    const settled = await settlePublished([a], log.calls(), read, 1);

    expect(settled.written).toEqual([{ message: a, shard: 0, id: '1700000000002-0' }]);
    expect(reads).toEqual([]);
  });

  it('refuses a call it cannot read and a reply that does not match the call', () => {
    const log = new PublishCallLog('orders');
    expect(() => log.sent(['other:{mail:1}', '', '', '', 'k1', '{"seq":1}', ''])).toThrow(
      /not a shard of stream orders/,
    );
    const call = log.sent(args(OLD0, [a, b]));
    expect(() => log.answered(call, ['1700000000000-0'])).toThrow(/1 ids for 2 entries/);
  });
});
