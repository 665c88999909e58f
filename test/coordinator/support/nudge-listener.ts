import type { Redis } from 'ioredis';
import { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import { connectRedis } from '../../support/redis-client.js';

/** One nudge as received: the member ids of the message and when it arrived. */
export interface ReceivedNudge {
  readonly memberIds: readonly string[];
  /** `performance.now()` at arrival. */
  readonly at: number;
  /** `Date.now()` at arrival (comparable with Redis times on the same host). */
  readonly wallAt: number;
}

/**
 * Subscribes to a group's nudge channel (`<prefix>:nudge:<group>`) with its own ioredis
 * connection, records every message, and hands each id to `onNudge` (e.g. a simulated member's
 * `nudge()`).
 */
export class NudgeListener {
  readonly received: ReceivedNudge[] = [];
  private readonly subscriber: Redis;
  private readonly waiters: Array<{
    memberId: string;
    after: number;
    resolve: (n: ReceivedNudge) => void;
  }> = [];

  private constructor(
    url: string,
    private readonly channel: string,
    private readonly onNudge: (memberId: string) => void,
  ) {
    this.subscriber = connectRedis(url);
    this.subscriber.on('message', (ch: string, message: string) => {
      if (ch !== this.channel) return;
      const nudge: ReceivedNudge = {
        memberIds: message.split('\n').filter(Boolean),
        at: performance.now(),
        wallAt: Date.now(),
      };
      this.received.push(nudge);
      for (const id of nudge.memberIds) this.onNudge(id);
      for (let i = this.waiters.length - 1; i >= 0; i--) {
        const w = this.waiters[i];
        if (w && nudge.at >= w.after && nudge.memberIds.includes(w.memberId)) {
          this.waiters.splice(i, 1);
          w.resolve(nudge);
        }
      }
    });
  }

  /** Subscribes and resolves once the subscription is active. */
  static async listen(
    url: string,
    prefix: string,
    groupId: string,
    onNudge: (memberId: string) => void = () => {},
  ): Promise<NudgeListener> {
    const listener = new NudgeListener(url, new KeySpace(prefix).nudgeChannel(groupId), onNudge);
    await listener.subscriber.subscribe(listener.channel);
    return listener;
  }

  /** The first nudge naming `memberId` that arrives at or after `after` (`performance.now()`). */
  next(memberId: string, after: number, timeoutMs = 5000): Promise<ReceivedNudge> {
    const already = this.received.find((n) => n.at >= after && n.memberIds.includes(memberId));
    if (already) return Promise.resolve(already);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        reject(
          new Error(
            `no nudge for ${memberId} within ${timeoutMs} ms (received: ${JSON.stringify(this.received)})`,
          ),
        );
      }, timeoutMs);
      this.waiters.push({
        memberId,
        after,
        resolve: (n) => {
          clearTimeout(timer);
          resolve(n);
        },
      });
    });
  }

  /** Nudges received at or after `after` that name `memberId`. */
  since(memberId: string, after: number): ReceivedNudge[] {
    return this.received.filter((n) => n.at >= after && n.memberIds.includes(memberId));
  }

  async close(): Promise<void> {
    this.subscriber.disconnect();
  }
}
