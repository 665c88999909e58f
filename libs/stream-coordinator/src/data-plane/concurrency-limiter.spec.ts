import { describe, expect, it } from 'vitest';
import { SemaphoreReleaseError } from '../errors/data-plane/semaphore-release.error.js';
import { Semaphore } from './concurrency-limiter.js';

describe('Semaphore', () => {
  it('hands out at most `permits` at once, then serves waiters first come, first served', async () => {
    const semaphore = new Semaphore(2);
    expect(semaphore.tryAcquire()).toBe(true);
    expect(semaphore.tryAcquire()).toBe(true);
    expect(semaphore.tryAcquire()).toBe(false);
    const order: number[] = [];
    const a = semaphore.acquire().then(() => order.push(1));
    const b = semaphore.acquire().then(() => order.push(2));
    expect(semaphore.waiting).toBe(2);
    semaphore.release();
    await a;
    expect(order).toEqual([1]);
    // a waiter keeps its turn: tryAcquire cannot jump the queue
    expect(semaphore.tryAcquire()).toBe(false);
    semaphore.release();
    await b;
    expect(order).toEqual([1, 2]);
    expect(semaphore.inUse).toBe(2);
    semaphore.release();
    semaphore.release();
    expect(semaphore.inUse).toBe(0);
    expect(() => semaphore.release()).toThrow(/without a matching acquire/);
    expect(() => semaphore.release()).toThrow(SemaphoreReleaseError);
    expect(semaphore.inUse).toBe(0);
  });

  it('an aborted waiter takes nothing and leaves the queue', async () => {
    const semaphore = new Semaphore(1);
    await semaphore.acquire();
    const controller = new AbortController();
    const waiting = semaphore.acquire(controller.signal);
    controller.abort(new Error('stopping'));
    await expect(waiting).rejects.toThrow('stopping');
    expect(semaphore.waiting).toBe(0);
    semaphore.release();
    expect(semaphore.inUse).toBe(0);
    await expect(semaphore.acquire(controller.signal)).rejects.toThrow('stopping');
  });

  it('rejects a bad permit count', () => {
    expect(() => new Semaphore(0)).toThrow(RangeError);
    expect(() => new Semaphore(1.5)).toThrow(/positive integer/);
  });
});
