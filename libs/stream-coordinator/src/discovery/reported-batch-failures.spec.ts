import { describe, expect, it } from 'vitest';
import { withReportedFailures } from './reported-batch-failures.js';

describe('withReportedFailures', () => {
  const own = { batchItemFailures: [{ itemIdentifier: '1-0' }] };

  it('keeps the chain result when the method reported no failure', () => {
    const chain = { data: undefined };
    expect(withReportedFailures(chain, undefined)).toBe(chain);
    expect(withReportedFailures(chain, { batchItemFailures: [] })).toBe(chain);
    expect(withReportedFailures(null, { batchItemFailures: 'bad' })).toBeNull();
  });

  it('keeps the method result passed through unchanged', () => {
    expect(withReportedFailures(own, own)).toBe(own);
  });

  it("uses the method's failures when a wrapper or fallback hid them", () => {
    expect(withReportedFailures({ data: own }, own)).toEqual(own);
    expect(withReportedFailures(null, own)).toEqual(own);
    expect(withReportedFailures(undefined, own)).toEqual(own);
  });

  it("unites the chain's failures (first) with the method's", () => {
    const chain = { batchItemFailures: [{ itemIdentifier: '2-0' }], extra: 1 };
    expect(withReportedFailures(chain, own)).toEqual({
      extra: 1,
      batchItemFailures: [{ itemIdentifier: '2-0' }, { itemIdentifier: '1-0' }],
    });
  });
});
