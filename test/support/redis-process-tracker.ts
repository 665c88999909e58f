/** Anything the Redis process helpers started that can be disposed of. */
export interface Disposable {
  /** Stops its processes and removes its files. Idempotent. */
  dispose(): Promise<void>;
}

const live = new Set<Disposable>();

/** Remembers `item` until it is disposed; returns the function that forgets it. */
export function trackRedisProcess(item: Disposable): () => void {
  live.add(item);
  return () => {
    live.delete(item);
  };
}

/**
 * Disposes of every restartable Redis and cluster still running in this process. Suites that
 * start them call this (or each handle's `dispose()`) in `afterAll`; process exit kills the rest.
 */
export async function stopAllRedisProcesses(): Promise<void> {
  const items = [...live];
  live.clear();
  await Promise.allSettled(items.map((item) => item.dispose()));
}
