import { describe, expect, it } from 'vitest';
import { ShardMessage } from '../data-plane/shard-message.js';
import { MemberRuntimeEvents, type ShardActivity } from './member-runtime-events.js';
import type { GrantedShard } from './membership.js';

const shard: GrantedShard = { stream: 'orders', shard: 3, key: 'rsc:orders:3' };
const message = new ShardMessage('1-0', 'orders', 3, 'k', {}, {}, 1);

describe('MemberRuntimeEvents', () => {
  it('gives onHandled listeners the reader shard object, the duration and the message', () => {
    const events = new MemberRuntimeEvents();
    const seen: Array<[GrantedShard, number, string]> = [];
    const stop = events.onHandled((s, ms, m) => seen.push([s, ms, m.id]));
    const hooks = events.readerHooks(shard);
    hooks.handled?.(1.5, message);
    hooks.handled?.(2, message);
    stop();
    hooks.handled?.(3, message);
    expect(seen).toEqual([
      [shard, 1.5, '1-0'],
      [shard, 2, '1-0'],
    ]);
    expect(seen[0]?.[0]).toBe(shard);
  });

  it('leaves handled activities out for listeners that ask so, and keeps the others', () => {
    const events = new MemberRuntimeEvents();
    const all: ShardActivity[] = [];
    const some: ShardActivity[] = [];
    const stopAll = events.onActivity((a) => all.push(a));
    const stopSome = events.onActivity((a) => some.push(a), { handled: false });
    const hooks = events.readerHooks(shard);
    hooks.handled?.(1, message);
    hooks.retried?.(message);
    expect(all.map((a) => Object.keys(a).filter((k) => k !== 'shard'))).toEqual([
      ['handled'],
      ['retried'],
    ]);
    expect(some.map((a) => Object.keys(a).filter((k) => k !== 'shard'))).toEqual([['retried']]);
    // with only a `handled: false` listener left, no handled activity is built at all
    stopAll();
    hooks.handled?.(1, message);
    expect(some).toHaveLength(1);
    stopSome();
    stopSome(); // idempotent: the count of handled listeners stays right
    const late: ShardActivity[] = [];
    events.onActivity((a) => late.push(a));
    hooks.handled?.(1, message);
    expect(late).toHaveLength(1);
  });

  it('leaves acked activities out for listeners that ask so; none is built when nobody wants them', () => {
    const events = new MemberRuntimeEvents();
    const quiet: ShardActivity[] = [];
    const stopQuiet = events.onActivity((a) => quiet.push(a), { handled: false, acked: false });
    const hooks = events.readerHooks(shard);
    hooks.acked?.(['1-0'], 5);
    hooks.retried?.(message);
    expect(quiet.map((a) => Object.keys(a).filter((k) => k !== 'shard'))).toEqual([['retried']]);
    const acks: ShardActivity[] = [];
    const stopAcks = events.onActivity((a) => acks.push(a), { handled: false });
    hooks.acked?.(['2-0'], 6);
    expect(acks.map((a) => a.acked)).toEqual([{ ids: ['2-0'], sentAt: 6 }]);
    expect(quiet).toHaveLength(1);
    stopAcks();
    stopAcks(); // idempotent: the count of ack listeners stays right
    hooks.acked?.(['3-0'], 7);
    expect(acks).toHaveLength(1);
    stopQuiet();
  });

  it('keeps the runtime going when a listener throws', () => {
    const events = new MemberRuntimeEvents();
    const seen: number[] = [];
    events.onHandled(() => {
      throw new Error('observer bug');
    });
    events.onHandled((_s, ms) => seen.push(ms));
    expect(() => events.readerHooks(shard).handled?.(4, message)).not.toThrow();
    expect(seen).toEqual([4]);
  });
});
