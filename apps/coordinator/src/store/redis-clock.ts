/**
 * The coordinator's notion of "now": Redis server time, estimated locally. Every Lua call returns
 * Redis's clock; the offset to the local clock is tracked so all replicas time sessions and
 * rebalances against one clock (Redis's), whatever their own clocks say.
 */
export class RedisClock {
  private offsetMs = 0;
  private calibrated = false;

  /** Records a Redis timestamp observed around local time `localAt` (default: now). */
  observe(redisNowMs: number, localAt: number = Date.now()): void {
    const offset = redisNowMs - localAt;
    // Smooth small jitter, jump on large corrections (e.g. a Redis failover to another host).
    this.offsetMs =
      !this.calibrated || Math.abs(offset - this.offsetMs) > 1000
        ? offset
        : this.offsetMs * 0.8 + offset * 0.2;
    this.calibrated = true;
  }

  /** Estimated Redis time, ms. */
  now(): number {
    return Math.round(Date.now() + this.offsetMs);
  }
}
