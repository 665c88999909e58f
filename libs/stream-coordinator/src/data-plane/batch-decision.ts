import { BatchItemFailedError } from '../errors/batch/batch-item-failed.error.js';
import { InvalidBatchResultError } from '../errors/batch/invalid-batch-result.error.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { toError } from './dead-letter.js';
import type { DeadLetterReason } from './shard-reader.types.js';

/** How one message of a batch came out of a handler call (pure input of {@link decideBatch}). */
export interface BatchItemState {
  /** Deliveries of the message so far, the one just handled included. */
  readonly deliveryCount: number;
  /** Why it failed (reported by the handler, or the whole batch threw); `undefined`: handled. */
  readonly failure?: Error;
  /** Its payload could not be decoded (it is dead-lettered whatever the handler said). */
  readonly undecodable?: Error;
}

/** What to do with one message that leaves the batch as dead (dead-lettered, then acked). */
export interface BatchDeadLetter {
  readonly index: number;
  readonly reason: DeadLetterReason;
  readonly error: Error;
}

/**
 * What becomes of a batch after one handler call. Every index below `retryFrom` (all of them
 * when it is `undefined`) is either in `handled` or in `deadLetters`, and is acknowledged; every
 * index from `retryFrom` on is retried, in order — none of them is acknowledged.
 */
export interface BatchDecision {
  /** Indexes handled (acked). */
  readonly handled: readonly number[];
  /** Indexes dead-lettered (then acked), with why. */
  readonly deadLetters: readonly BatchDeadLetter[];
  /** First index retried with everything after it; `undefined` when nothing is retried. */
  readonly retryFrom: number | undefined;
}

/**
 * Decides a batch in entry order (shard order kept): walking from the first message, a handled
 * one is acked; a failed one that cannot be retried — undecodable, a `NonRetryableError`, or at
 * `maxDeliveries` — is dead-lettered and acked (its fate is final, so later messages may pass
 * it); the first failed one that can be retried stops the walk: it and every message after it
 * are retried together, whether the handler reported them or not, so nothing is acked ahead of
 * a message still to be handled.
 */
export function decideBatch(
  items: readonly BatchItemState[],
  maxDeliveries: number,
): BatchDecision {
  const handled: number[] = [];
  const deadLetters: BatchDeadLetter[] = [];
  for (let index = 0; index < items.length; index++) {
    const item = items[index] as BatchItemState;
    if (item.undecodable !== undefined) {
      deadLetters.push({ index, reason: 'undecodable', error: item.undecodable });
    } else if (item.failure === undefined) {
      handled.push(index);
    } else if (item.failure instanceof NonRetryableError) {
      deadLetters.push({ index, reason: 'non-retryable', error: item.failure });
    } else if (item.deliveryCount >= maxDeliveries) {
      deadLetters.push({ index, reason: 'max-deliveries', error: item.failure });
    } else {
      return { handled, deadLetters, retryFrom: index };
    }
  }
  return { handled, deadLetters, retryFrom: undefined };
}

/**
 * Reads what a batch handler returned into the failures it reports, by index in `ids` (the
 * batch's entry ids, in order). Nothing (`undefined`, `null`), a value that is not an object, or
 * an object without `batchItemFailures` (or with `null`/an empty array) reports none.
 *
 * @throws InvalidBatchResultError when `batchItemFailures` is not an array, or an item does not
 *   name an entry of the batch by `itemIdentifier` (the whole batch then fails).
 */
export function batchFailures(
  result: unknown,
  ids: readonly string[],
  stream: string,
): Map<number, Error> {
  const failures = new Map<number, Error>();
  if (typeof result !== 'object' || result === null) return failures;
  const reported = (result as { batchItemFailures?: unknown }).batchItemFailures;
  if (reported === undefined || reported === null) return failures;
  if (!Array.isArray(reported)) {
    throw new InvalidBatchResultError(stream, 'batchItemFailures is not an array');
  }
  let indexes: Map<string, number> | undefined;
  for (const item of reported as unknown[]) {
    const id =
      typeof item === 'object' && item !== null
        ? (item as { itemIdentifier?: unknown }).itemIdentifier
        : undefined;
    if (typeof id !== 'string' || id === '') {
      throw new InvalidBatchResultError(
        stream,
        'an item of batchItemFailures has no itemIdentifier (a message id)',
      );
    }
    indexes ??= new Map(ids.map((entryId, index) => [entryId, index]));
    const index = indexes.get(id);
    if (index === undefined) {
      throw new InvalidBatchResultError(stream, `itemIdentifier "${id}" is not in the batch`);
    }
    if (failures.has(index)) continue;
    const error = (item as { error?: unknown }).error;
    failures.set(index, error === undefined ? new BatchItemFailedError(id) : toError(error));
  }
  return failures;
}
