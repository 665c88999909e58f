import { describe, expect, it } from 'vitest';
import type { GroupState } from '../core/group-state.js';
import type { WriteResult } from '../store/group-store.js';
import { TouchBatcher } from './touch-batcher.js';

/** A group state with only what the batcher reads. */
function stateAt(version: number, groupId = 'g', createdAt = 1): GroupState {
  return { groupId, meta: { version, createdAt } } as unknown as GroupState;
}

/** A touchMany whose calls the test settles by hand. */
function manualStore() {
  const calls: Array<{ version: number; ids: string[]; settle: (r: WriteResult | Error) => void }> =
    [];
  const touchMany = (state: GroupState, ids: readonly string[]): Promise<WriteResult> =>
    new Promise((resolve, reject) => {
      calls.push({
        version: state.meta.version,
        ids: [...ids],
        settle: (r) => (r instanceof Error ? reject(r) : resolve(r)),
      });
    });
  return { calls, touchMany };
}

const ok = (version: number): WriteResult => ({ ok: true, now: 1000, version });
const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('TouchBatcher', () => {
  it('sends a lone touch at once, with its member only', async () => {
    const store = manualStore();
    const batcher = new TouchBatcher(store.touchMany);
    const done = batcher.touch(stateAt(3), 'a');
    await tick();
    expect(store.calls.map((c) => [c.version, c.ids])).toEqual([[3, ['a']]]);
    store.calls[0]?.settle(ok(3));
    await expect(done).resolves.toEqual(ok(3));
  });

  it('coalesces the touches that arrive while one is in flight into the next call', async () => {
    const store = manualStore();
    const batcher = new TouchBatcher(store.touchMany);
    const first = batcher.touch(stateAt(3), 'a');
    await tick();
    const later = ['b', 'c', 'd'].map((id) => batcher.touch(stateAt(3), id));
    await tick();
    expect(store.calls).toHaveLength(1);
    store.calls[0]?.settle(ok(3));
    await first;
    await tick();
    expect(store.calls.map((c) => c.ids)).toEqual([['a'], ['b', 'c', 'd']]);
    store.calls[1]?.settle({ ok: false, reason: 'conflict', currentVersion: 4 });
    for (const p of later)
      await expect(p).resolves.toEqual({ ok: false, reason: 'conflict', currentVersion: 4 });
  });

  it('never mixes versions in one call and keeps their order', async () => {
    const store = manualStore();
    const batcher = new TouchBatcher(store.touchMany);
    const a = batcher.touch(stateAt(3), 'a');
    const b = batcher.touch(stateAt(4), 'b');
    const c = batcher.touch(stateAt(4), 'c');
    await tick();
    store.calls[0]?.settle(ok(3));
    await a;
    await tick();
    expect(store.calls.map((x) => [x.version, x.ids])).toEqual([
      [3, ['a']],
      [4, ['b', 'c']],
    ]);
    store.calls[1]?.settle(ok(4));
    await expect(Promise.all([b, c])).resolves.toEqual([ok(4), ok(4)]);
  });

  it('keeps groups apart: each has its own call in flight', async () => {
    const store = manualStore();
    const batcher = new TouchBatcher(store.touchMany);
    void batcher.touch(stateAt(1, 'g1'), 'a');
    void batcher.touch(stateAt(1, 'g2'), 'b');
    await tick();
    expect(store.calls.map((c) => c.ids)).toEqual([['a'], ['b']]);
  });

  it('drain resolves only after every queued touch of the group was written', async () => {
    const store = manualStore();
    const batcher = new TouchBatcher(store.touchMany);
    void batcher.touch(stateAt(1), 'a');
    await tick();
    void batcher.touch(stateAt(1), 'b');
    let drained = false;
    const drain = batcher.drain('g').then(() => (drained = true));
    store.calls[0]?.settle(ok(1));
    await tick();
    expect(drained).toBe(false);
    store.calls[1]?.settle(ok(1));
    await drain;
    expect(drained).toBe(true);
    await expect(batcher.drain('g')).resolves.toBeUndefined();
  });

  it('a failed call rejects its own waiters only; the next batch still goes out', async () => {
    const store = manualStore();
    const batcher = new TouchBatcher(store.touchMany);
    const a = batcher.touch(stateAt(1), 'a');
    await tick();
    const b = batcher.touch(stateAt(1), 'b');
    store.calls[0]?.settle(new Error('redis down'));
    await expect(a).rejects.toThrow('redis down');
    await tick();
    store.calls[1]?.settle(ok(1));
    await expect(b).resolves.toEqual(ok(1));
  });
});
