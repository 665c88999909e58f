/**
 * Runs tasks one at a time per key (tasks for different keys run concurrently). Each group's
 * requests are serialised this way inside one replica; across replicas the store's
 * compare-and-set takes over.
 */
export class KeyedQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs `task` after every task queued before it for `key`. */
  run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const next = previous.then(task, task);
    const tail = next.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }

  /** Number of keys with queued or running work. */
  get activeKeys(): number {
    return this.tails.size;
  }
}
