import { randomUUID } from 'node:crypto';
import type { Cluster, Redis } from 'ioredis';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';

/**
 * The incarnation marker of docs/protocol.md §13.6: a random id written once per Redis dataset
 * (`SET NX`). A coordinator remembers the id it saw; when the key is gone or holds another id,
 * Redis lost its data (a FLUSHALL, a restart without persistence or from an older snapshot, an
 * eviction) since the last check.
 */
export class IncarnationMarker {
  private known: string | null = null;

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly keys: KeySpace,
    private readonly newId: () => string = randomUUID,
  ) {}

  /** The id this coordinator holds (null before {@link adopt}). */
  get current(): string | null {
    return this.known;
  }

  /** Reads the marker, writing a new one when Redis has none; remembers it. */
  async adopt(): Promise<string> {
    const key = this.keys.incarnationKey();
    for (;;) {
      const found = await this.redis.get(key);
      if (found !== null) return (this.known = found);
      const id = this.newId();
      if ((await this.redis.set(key, id, 'NX')) === 'OK') return (this.known = id);
    }
  }

  /**
   * Whether Redis lost its data since the last check: the marker is gone or changed (then the
   * current one, written afresh when gone, is adopted). False before the first {@link adopt}.
   */
  async lostSinceLastCheck(): Promise<boolean> {
    if (this.known === null) {
      await this.adopt();
      return false;
    }
    const found = await this.redis.get(this.keys.incarnationKey());
    if (found === this.known) return false;
    await this.adopt();
    return true;
  }
}
