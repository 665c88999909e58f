import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatchItemFailedError } from '../errors/batch/batch-item-failed.error.js';
import { InvalidBatchResultError } from '../errors/batch/invalid-batch-result.error.js';
import { NonRetryableError } from '../errors/non-retryable.error.js';
import { batchFailures, decideBatch, type BatchItemState } from './batch-decision.js';

const MAX = 5;

const items = fc
  .array(
    fc.record({
      deliveryCount: fc.integer({ min: 1, max: MAX + 1 }),
      kind: fc.constantFrom('ok', 'ok', 'failed', 'non-retryable', 'undecodable'),
    }),
    { maxLength: 40 },
  )
  .map((drawn) =>
    drawn.map(({ deliveryCount, kind }): BatchItemState => {
      if (kind === 'ok') return { deliveryCount };
      if (kind === 'undecodable') return { deliveryCount, undecodable: new Error('bad payload') };
      const failure =
        kind === 'failed' ? new Error('boom') : NonRetryableError.from(new Error('never'));
      return { deliveryCount, failure };
    }),
  );

const retryable = (item: BatchItemState): boolean =>
  item.undecodable === undefined &&
  item.failure !== undefined &&
  !(item.failure instanceof NonRetryableError) &&
  item.deliveryCount < MAX;

describe('decideBatch', () => {
  it('partitions the batch: an acked prefix (handled or dead-lettered), then a retried suffix', () => {
    fc.assert(
      fc.property(items, (batch) => {
        const decision = decideBatch(batch, MAX);
        const end = decision.retryFrom ?? batch.length;
        const acked = [...decision.handled, ...decision.deadLetters.map((d) => d.index)];
        expect(acked.toSorted((a, b) => a - b)).toEqual([...Array(end).keys()]);
      }),
    );
  });

  it('never acks a failure, and retries from the first retryable failure', () => {
    fc.assert(
      fc.property(items, (batch) => {
        const decision = decideBatch(batch, MAX);
        for (const index of decision.handled) {
          expect(batch[index]?.failure).toBeUndefined();
          expect(batch[index]?.undecodable).toBeUndefined();
        }
        const first = batch.findIndex(retryable);
        expect(decision.retryFrom).toBe(first === -1 ? undefined : first);
      }),
    );
  });

  it('dead-letters what cannot be retried, with its reason', () => {
    fc.assert(
      fc.property(items, (batch) => {
        for (const { index, reason, error } of decideBatch(batch, MAX).deadLetters) {
          const item = batch[index] as BatchItemState;
          if (item.undecodable !== undefined) {
            expect([reason, error]).toEqual(['undecodable', item.undecodable]);
          } else if (item.failure instanceof NonRetryableError) {
            expect([reason, error]).toEqual(['non-retryable', item.failure]);
          } else {
            expect(reason).toBe('max-deliveries');
            expect(item.deliveryCount).toBeGreaterThanOrEqual(MAX);
            expect(error).toBe(item.failure);
          }
        }
      }),
    );
  });

  it('keeps order on a small example: [ok, failed, ok] retries the last two', () => {
    const boom = new Error('boom');
    expect(
      decideBatch(
        [{ deliveryCount: 1 }, { deliveryCount: 1, failure: boom }, { deliveryCount: 1 }],
        MAX,
      ),
    ).toEqual({ handled: [0], deadLetters: [], retryFrom: 1 });
  });
});

describe('batchFailures', () => {
  const ids = ['1-0', '1-1', '2-0'];

  it('reads nothing, null, non-objects and empty lists as no failure', () => {
    for (const result of [undefined, null, 3, 'x', true, {}, { batchItemFailures: [] }]) {
      expect(batchFailures(result, ids, 'orders').size).toBe(0);
    }
    expect(batchFailures({ batchItemFailures: null }, ids, 'orders').size).toBe(0);
  });

  it('maps reported ids to their index, with their error or a BatchItemFailedError', () => {
    const boom = new Error('boom');
    const failures = batchFailures(
      { batchItemFailures: [{ itemIdentifier: '2-0', error: boom }, { itemIdentifier: '1-0' }] },
      ids,
      'orders',
    );
    expect(failures.get(2)).toBe(boom);
    expect(failures.get(0)).toBeInstanceOf(BatchItemFailedError);
    expect(failures.has(1)).toBe(false);
  });

  it('fails the whole batch on an unreadable result', () => {
    for (const result of [
      { batchItemFailures: 'all' },
      { batchItemFailures: [{}] },
      { batchItemFailures: [{ itemIdentifier: '' }] },
      { batchItemFailures: [{ itemIdentifier: 9 }] },
      { batchItemFailures: [{ itemIdentifier: '9-9' }] },
    ]) {
      expect(() => batchFailures(result, ids, 'orders')).toThrow(InvalidBatchResultError);
    }
  });

  it('reports exactly the named ids of the batch', () => {
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.integer({ min: 0, max: 1000 }), { minLength: 1, maxLength: 30 }),
        fc.array(fc.nat(), { maxLength: 30 }),
        (seqs, picks) => {
          const batchIds = seqs.map((seq) => `1-${seq}`);
          const named = picks.map((pick) => batchIds[pick % batchIds.length] as string);
          const failures = batchFailures(
            { batchItemFailures: named.map((itemIdentifier) => ({ itemIdentifier })) },
            batchIds,
            'orders',
          );
          expect([...failures.keys()].map((index) => batchIds[index]).toSorted()).toEqual(
            [...new Set(named)].toSorted(),
          );
        },
      ),
    );
  });
});
