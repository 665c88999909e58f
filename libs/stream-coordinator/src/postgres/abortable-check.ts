import type { PoolClient } from 'pg';

/**
 * Rejection of a check the reader stopped waiting for: the answer is unknown, so the reader
 * neither acknowledges nor dead-letters the entry (the next owner asks again).
 */
function abortedCheck(): Error {
  return new Error(
    'the applied check was abandoned: the reader stopped (revoke, lost shard or shutdown)',
  );
}

/**
 * `call`, or a rejection as soon as `signal` fires (at once if it already did): a reader stopping
 * is not held up by a check waiting for a connection or for the offset row's lock.
 *
 * @internal
 */
export function untilAborted<T>(call: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return call;
  if (signal.aborted) {
    // whatever the abandoned call settles with is not waited for
    call.catch(() => undefined);
    return Promise.reject(abortedCheck());
  }
  let onAbort: (() => void) | undefined;
  return Promise.race([
    call,
    new Promise<never>((_, reject) => {
      onAbort = () => {
        call.catch(() => undefined);
        reject(abortedCheck());
      };
      signal.addEventListener('abort', onAbort, { once: true });
    }),
  ]).finally(() => signal.removeEventListener('abort', onAbort!));
}

/**
 * Ends `client`'s connection when `signal` fires, so its statement stops at once on the client
 * (a `FOR UPDATE` waiting for a held row would otherwise keep the connection until
 * `lock_timeout`); its backend, waiting for a lock and holding none the entry's transaction
 * needs, ends within that timeout. Returns the listener's removal; call it before releasing.
 * The caller releases the client with an error then (its `ROLLBACK` fails), so it is destroyed.
 *
 * @internal
 */
export function endOnAbort(client: PoolClient, signal: AbortSignal | undefined): () => void {
  if (signal === undefined) return () => undefined;
  const end = (): void => {
    // the failed statement reports it; the end itself has nothing to add
    client.end().catch(() => undefined);
  };
  if (signal.aborted) {
    end();
    return () => undefined;
  }
  signal.addEventListener('abort', end, { once: true });
  return () => signal.removeEventListener('abort', end);
}
