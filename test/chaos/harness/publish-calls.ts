import type { Redis } from 'ioredis';
import type { HandledRecord, ProducedMessage } from '../../support/invariants/index.js';

/** A message of the chaos producer: `payload = {seq}`, per-key sequence numbers. */
export interface OutgoingMessage {
  readonly key: string;
  readonly seq: number;
}

/** One publish script call the producer's connection sent, and what became of it. */
export interface PublishCall {
  readonly shardKey: string;
  readonly shard: number;
  readonly messages: readonly OutgoingMessage[];
  /**
   * `written`: Redis answered with these ids (in `messages` order). `refused`: Redis answered
   * `STALE_ROUTING`, which the script checks before any write, so nothing was written. `unknown`:
   * no answer (the connection died, the call timed out): Redis may or may not have run it.
   * `sent`: not settled yet.
   */
  state: 'sent' | 'written' | 'refused' | 'unknown';
  ids?: readonly string[];
  /** When it was sent (ms since the epoch; Redis on this machine stamps ids with the same clock). */
  readonly sentAt: number;
}

/** `XREVRANGE` rows: id and flat field list. */
export type TailEntry = [id: string, fields: string[]];

/** The newest `count` entries of a shard, newest first. */
export type TailReader = (shardKey: string, count: number) => Promise<readonly TailEntry[]>;

/** The library's publish script, as its connection method is named (`PUBLISH_SCRIPT.name`). */
export const PUBLISH_SCRIPT_METHOD = 'rscPublish';

/**
 * The publish script calls of one publish, as the connection saw them: each call's shard key
 * (the script's only key) and messages, and its reply. That is where each message was written,
 * exactly — whatever routing the publisher used for it, and whether or not Redis still has it.
 */
export class PublishCallLog {
  private list: PublishCall[] = [];
  private readonly shardPattern: RegExp;

  constructor(readonly stream: string) {
    this.shardPattern = new RegExp(`\\{${escape(stream)}:(\\d+)\\}$`);
  }

  /** Forgets every call (before the next publish). */
  clear(): void {
    this.list = [];
  }

  /** The calls so far, in the order they were sent. */
  calls(): readonly PublishCall[] {
    return this.list;
  }

  /** A call with the script's arguments: shard key, trim mode, `~`/`=`, threshold, triples. */
  sent(args: readonly unknown[]): PublishCall {
    const shardKey = String(args[0]);
    const match = this.shardPattern.exec(shardKey);
    if (match === null) {
      throw new Error(`publish call to ${shardKey}: not a shard of stream ${this.stream}`);
    }
    const messages: OutgoingMessage[] = [];
    for (let i = 4; i + 2 < args.length; i += 3) {
      const seq = seqOf(args[i + 1]);
      if (seq === null) throw new Error(`publish call to ${shardKey}: entry ${i} has no seq`);
      messages.push({ key: String(args[i]), seq });
    }
    const call: PublishCall = {
      shardKey,
      shard: Number(match[1]),
      messages,
      state: 'sent',
      sentAt: Date.now(),
    };
    this.list.push(call);
    return call;
  }

  /** Redis answered `call` with the new entry ids. */
  answered(call: PublishCall, ids: unknown): void {
    if (!Array.isArray(ids) || ids.length !== call.messages.length) {
      const n = Array.isArray(ids) ? ids.length : String(ids);
      throw new Error(
        `publish call to ${call.shardKey}: ${n} ids for ${call.messages.length} entries`,
      );
    }
    call.state = 'written';
    call.ids = ids.map(String);
  }

  /** `call` failed: refused by the script (nothing written) or unanswered (outcome unknown). */
  failed(call: PublishCall, error: unknown): void {
    const text = error instanceof Error ? error.message : String(error);
    call.state = text.startsWith('STALE_ROUTING') ? 'refused' : 'unknown';
  }

  /**
   * `redis` with its publish script method wrapped so that every call is logged here. The
   * library defines the script on the connection it is given (`defineCommand`), which lands on
   * `redis` itself; only reads of the method go through the wrapper.
   */
  watch(redis: Redis): Redis {
    return new Proxy(redis, {
      get: (target, property) => {
        const value = Reflect.get(target, property, target) as unknown;
        if (typeof value !== 'function') return value;
        const method = value as (...a: unknown[]) => Promise<unknown>;
        if (property !== PUBLISH_SCRIPT_METHOD) return method.bind(target);
        return async (...a: unknown[]) => {
          const call = this.sent(a);
          try {
            const ids = await method.apply(target, a);
            this.answered(call, ids);
            return ids;
          } catch (error) {
            this.failed(call, error);
            throw error;
          }
        };
      },
    });
  }
}

/** A message whose call got no answer and which its call's shard tail did not show. */
export interface UnsettledMessage {
  readonly message: OutgoingMessage;
  /** The shard its unanswered call went to. */
  readonly shard: number;
  /**
   * When the call was sent and when the lookup began (ms since the epoch): a write of the call has
   * an id between the two (the lookup waits until Redis answers again, after every earlier call).
   */
  readonly sentAt: number;
  readonly settledAt: number;
  /** The producer's publish attempt that sent the call (a copy it wrote has this round). */
  readonly round: number;
}

/** Clock slack for an entry id's time against the producer's own clock (same machine). */
const COPY_SLACK_MS = 100;

/**
 * What a publish of `pending` wrote, from its script calls: a message a call was answered for
 * is written there with that id (even if Redis lost it since: it was produced, and a rollback's
 * loss is the run's to count); one whose call got no answer is looked for at the tail of that
 * call's shard (only this producer writes, one publish at a time); the rest — refused, never
 * sent, or unanswered and not there — is returned in order, to be published again.
 *
 * An unanswered message missing from its tail is also returned as `unsettled`: the tail cannot
 * show a write the shard no longer holds — a reshard removed the shard (drained) before the
 * lookup, or a Redis rollback lost the write after a member handled it. Such a message may be
 * written twice; {@link handledCopies} finds the first copy among the handlings.
 */
export async function settlePublished(
  pending: readonly OutgoingMessage[],
  calls: readonly PublishCall[],
  readTail: TailReader,
  round: number,
): Promise<{
  written: Array<{ message: OutgoingMessage; shard: number; id: string }>;
  /** Of `written`, how many were found at a tail (their call got no answer). */
  lookedUp: number;
  rest: OutgoingMessage[];
  /** Of `rest`, the messages an unanswered call may have written (see above). */
  unsettled: UnsettledMessage[];
}> {
  const settledAt = Date.now();
  const answered = new Map<string, { shard: number; id: string }>();
  const unanswered = new Map<string, PublishCall>();
  for (const call of calls) {
    call.messages.forEach((m, i) => {
      if (call.state === 'written') {
        answered.set(name(m), { shard: call.shard, id: call.ids?.[i] as string });
      } else if (call.state === 'unknown' || call.state === 'sent') {
        unanswered.set(name(m), call);
      }
    });
  }
  const lookups = new Map<string, number>();
  for (const m of pending) {
    const call = unanswered.get(name(m));
    if (!answered.has(name(m)) && call !== undefined) {
      lookups.set(call.shardKey, (lookups.get(call.shardKey) ?? 0) + 1);
    }
  }
  const found = new Map<string, string>();
  for (const [shardKey, count] of lookups) {
    for (const [id, fields] of await readTail(shardKey, count + 50)) {
      const entry = decodeEntry(fields);
      if (entry !== null) found.set(`${name(entry)}@${shardKey}`, id);
    }
  }
  const written: Array<{ message: OutgoingMessage; shard: number; id: string }> = [];
  const rest: OutgoingMessage[] = [];
  const unsettled: UnsettledMessage[] = [];
  let lookedUp = 0;
  for (const m of pending) {
    const hit = answered.get(name(m));
    const call = unanswered.get(name(m));
    const id = call === undefined ? undefined : found.get(`${name(m)}@${call.shardKey}`);
    if (hit !== undefined) written.push({ message: m, ...hit });
    else if (call !== undefined && id !== undefined) {
      written.push({ message: m, shard: call.shard, id });
      lookedUp++;
    } else {
      rest.push(m);
      if (call !== undefined) {
        unsettled.push({ message: m, shard: call.shard, sentAt: call.sentAt, settledAt, round });
      }
    }
  }
  return { written, lookedUp, rest, unsettled };
}

/**
 * The entries of unsettled messages that members handled: a handling of an unsettled message's
 * key and seq on the shard its unanswered call went to, with an id stamped between the call's
 * send and its lookup, is that call's write, so it was produced (and published again since).
 * One entry per unsettled message at most — a second is no write of that call, and is left to
 * the checker — and none already in `produced`. (Several groups handling one entry: one copy.)
 */
export function handledCopies(
  unsettled: readonly UnsettledMessage[],
  handled: readonly HandledRecord[],
  produced: readonly ProducedMessage[],
): ProducedMessage[] {
  const candidates = new Map<string, HandledRecord[]>();
  for (const h of handled) {
    const at = `${h.k}#${h.q}@${h.s}`;
    const list = candidates.get(at);
    if (list === undefined) candidates.set(at, [h]);
    else list.push(h);
  }
  const seen = new Set(produced.map((p) => `${p.shard}|${p.id}`));
  const copies: ProducedMessage[] = [];
  for (const u of unsettled) {
    const hit = (candidates.get(`${name(u.message)}@${u.shard}`) ?? []).find((h) => {
      const ms = Number(h.id.split('-')[0]);
      return (
        !seen.has(`${h.s}|${h.id}`) &&
        ms >= u.sentAt - COPY_SLACK_MS &&
        ms <= u.settledAt + COPY_SLACK_MS
      );
    });
    if (hit === undefined) continue;
    seen.add(`${hit.s}|${hit.id}`);
    copies.push({ key: hit.k, seq: hit.q, shard: hit.s, id: hit.id, round: u.round });
  }
  return copies;
}

/** `{key, seq}` of a shard entry written by the chaos producer, or null. */
export function decodeEntry(fields: readonly string[]): OutgoingMessage | null {
  let key: string | undefined;
  let payload: string | undefined;
  for (let i = 0; i + 1 < fields.length; i += 2) {
    if (fields[i] === 'key') key = fields[i + 1];
    else if (fields[i] === 'payload') payload = fields[i + 1];
  }
  if (key === undefined || payload === undefined) return null;
  const seq = seqOf(payload);
  return seq === null ? null : { key, seq };
}

function seqOf(payload: unknown): number | null {
  try {
    const seq = (JSON.parse(String(payload)) as { seq?: unknown }).seq;
    return typeof seq === 'number' ? seq : null;
  } catch {
    return null;
  }
}

function name(m: OutgoingMessage): string {
  return `${m.key}#${m.seq}`;
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
