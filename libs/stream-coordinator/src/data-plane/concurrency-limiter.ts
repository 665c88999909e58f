import { SemaphoreReleaseError } from '../errors/data-plane/semaphore-release.error.js';

/**
 * Caps how many handler calls run at once across several shard readers (each reader runs at
 * most one at a time; the limiter bounds the sum). Readers call `tryAcquire()` and, when it
 * returns `false`, `acquire(signal)`; they call `release()` once per successful acquire.
 */
export interface ConcurrencyLimiter {
  /** Takes a permit if one is free, synchronously. */
  tryAcquire(): boolean;
  /**
   * Waits for a permit (first come, first served). Rejects with the signal's reason, and takes
   * nothing, when `signal` aborts first.
   */
  acquire(signal?: AbortSignal): Promise<void>;
  /** Returns a permit. */
  release(): void;
}

interface Waiter {
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/**
 * A counting semaphore: the default {@link ConcurrencyLimiter}.
 */
export class Semaphore implements ConcurrencyLimiter {
  private free: number;
  private readonly waiters: Waiter[] = [];

  /** @throws RangeError when `permits` is not a positive integer. */
  constructor(readonly permits: number) {
    if (!Number.isInteger(permits) || permits < 1) {
      throw new RangeError(`concurrency must be a positive integer, got ${String(permits)}`);
    }
    this.free = permits;
  }

  /** Permits in use. */
  get inUse(): number {
    return this.permits - this.free;
  }

  /** Callers waiting for a permit. */
  get waiting(): number {
    return this.waiters.length;
  }

  tryAcquire(): boolean {
    if (this.free > 0 && this.waiters.length === 0) {
      this.free--;
      return true;
    }
    return false;
  }

  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.tryAcquire()) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          const index = this.waiters.indexOf(waiter);
          if (index >= 0) this.waiters.splice(index, 1);
          reject(signal?.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      this.waiters.push(waiter);
    });
  }

  /** @throws SemaphoreReleaseError when no permit is taken. */
  release(): void {
    const next = this.waiters.shift();
    if (next) {
      next.signal?.removeEventListener('abort', next.onAbort);
      next.resolve();
      return;
    }
    if (this.free >= this.permits) throw new SemaphoreReleaseError();
    this.free++;
  }
}
