interface Queued<T> {
  /** The run this one waits behind. */
  readonly behind: Promise<T>;
  readonly promise: Promise<T>;
}

/**
 * Runs a task one at a time, where each `run()` settles with a run that started after the call:
 * a read that must show every write committed before it was asked for (the caller's own write,
 * or a change another replica announced). A run already in flight may have read before that
 * write, so callers arriving meanwhile share one more run queued behind it. Runs never overlap,
 * so a slower, older read never overwrites a newer one.
 */
export class FreshSingleFlight<T = void> {
  private running: Promise<T> | null = null;
  private queued: Queued<T> | null = null;

  constructor(private readonly task: () => Promise<T>) {}

  /** A run that starts after this call (shared with other callers); rejects if that run fails. */
  run(): Promise<T> {
    const running = this.running;
    if (!running) return this.start();
    if (this.queued?.behind !== running) {
      const promise: Promise<T> = running
        .catch(() => undefined)
        .then(() => {
          if (this.queued?.promise === promise) this.queued = null;
          // A run another caller started since then also began after every call queued here.
          return this.running ?? this.start();
        });
      this.queued = { behind: running, promise };
    }
    return this.queued.promise;
  }

  /** Resolves when no run is in flight or queued (never rejects): for a stop that waits. */
  async idle(): Promise<void> {
    for (;;) {
      const pending = this.queued?.promise ?? this.running;
      if (!pending) return;
      await pending.catch(() => undefined);
    }
  }

  private start(): Promise<T> {
    let started: Promise<T>;
    try {
      started = this.task();
    } catch (error) {
      started = Promise.reject(error);
    }
    const run: Promise<T> = started.finally(() => {
      if (this.running === run) this.running = null;
    });
    this.running = run;
    return run;
  }
}
