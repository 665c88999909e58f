import { Cluster as Cluster5 } from 'ioredis5';

/** Highest hash slot of a Redis Cluster. */
const LAST_SLOT = 16383;

/**
 * The bundled ioredis 5's Cluster client with the `MOVED` guard ioredis 6.0.0 added: a `MOVED`
 * reply whose slot is not an integer in 0–16383 fails the command instead of being followed.
 * ioredis 5.11.1 indexes its slot array with the reply's text, so `MOVED __proto__ host:port`
 * (from a hostile node, or injected on an unencrypted connection) would write into
 * `Array.prototype`, for the whole process. Overrides `handleError`, the method ioredis 6 patched
 * (`ioredis/built/cluster/index.js`; public in ioredis 5's typings, undocumented).
 * `test/library/data-plane/reader-cluster.e2e-spec.ts` sends such replies from a real socket, so
 * an ioredis 5 release that renames the method fails it.
 */
export class ReaderCluster extends Cluster5 {
  override handleError(
    error: Error,
    ttl: { value?: number },
    handlers: { defaults(): void },
  ): void {
    const words = error.message.split(' ');
    if (words[0] === 'MOVED' && !isSlot(words[1])) {
      handlers.defaults();
      return;
    }
    super.handleError(error, ttl, handlers);
  }
}

function isSlot(text: string | undefined): boolean {
  if (text === undefined || !/^\d{1,5}$/.test(text)) return false;
  return Number(text) <= LAST_SLOT;
}
