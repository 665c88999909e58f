import { StreamCoordinatorError } from '../stream-coordinator.error.js';

/**
 * Why Redis refused (or ended) a gated read:
 * - `gate-closed` — this member's read gate is missing (NOGROUP on the gate key): the coordinator
 *   moved or released the shard, or has not opened the gate yet;
 * - `no-group` — the shard has no consumer group for the group (NOGROUP on the shard key);
 * - `unblocked` — a blocked read ended because one of its keys was deleted, or its consumer group
 *   destroyed, meanwhile (which one Redis does not say).
 */
export type ShardReadRefusal = 'gate-closed' | 'no-group' | 'unblocked';

/**
 * A gated read was refused (see {@link ShardReadRefusal}). Nothing was delivered: Redis checks
 * the consumer group of every key before it serves any. The reader re-runs its acquire step,
 * which tells a moved fence (the shard is lost), a gate not open yet (wait) and a missing
 * consumer group (create it) apart.
 */
export class ShardReadRefusedError extends StreamCoordinatorError {
  override readonly name = 'ShardReadRefusedError';

  constructor(
    /** The shard stream key. */
    readonly key: string,
    readonly refusal: ShardReadRefusal,
    /** The Redis error reply. */
    readonly reply: string,
  ) {
    super(`gated read of shard ${key} refused (${refusal}): ${reply}`);
  }

  /**
   * Classifies a Redis error of `XREADGROUP … STREAMS <gateKey> <key> > >`; `undefined` when it is
   * not a refusal (a connection error, say). NOGROUP names the first key whose group is missing,
   * and the gate comes first, so a missing gate is never mistaken for a missing shard group.
   */
  static fromReply(
    error: unknown,
    key: string,
    gateKey: string,
  ): ShardReadRefusedError | undefined {
    if (!(error instanceof Error)) return undefined;
    const text = error.message;
    if (text.startsWith('UNBLOCKED')) return new ShardReadRefusedError(key, 'unblocked', text);
    if (!text.startsWith('NOGROUP')) return undefined;
    if (text.includes(`'${gateKey}'`)) return new ShardReadRefusedError(key, 'gate-closed', text);
    if (text.includes(`'${key}'`)) return new ShardReadRefusedError(key, 'no-group', text);
    return new ShardReadRefusedError(key, 'unblocked', text);
  }
}
