import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { InvalidStreamEntryIdError } from '../errors/postgres/invalid-stream-entry-id.error.js';
import {
  alreadyApplied,
  BEFORE_ANY_ENTRY,
  compareStreamEntryIds,
  formatStreamEntryId,
  parseStreamEntryId,
} from './stream-entry-id.js';

const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
const entryId = fc.record({ ms: u64, seq: u64 });

describe('stream entry ids', () => {
  it('orders numerically, not as strings', () => {
    const nine = parseStreamEntryId('9-0');
    const ten = parseStreamEntryId('10-0');
    expect(compareStreamEntryIds(nine, ten)).toBeLessThan(0);
    expect(['10-0', '9-0'].sort()).toEqual(['10-0', '9-0']); // the trap: strings order 10 first
    expect(compareStreamEntryIds(parseStreamEntryId('5-9'), parseStreamEntryId('5-10'))).toBe(-1);
  });

  it('handles both parts up to 2^64 - 1', () => {
    const max = '18446744073709551615';
    expect(formatStreamEntryId(parseStreamEntryId(`${max}-${max}`))).toBe(`${max}-${max}`);
    expect(() => parseStreamEntryId(`18446744073709551616-0`)).toThrow(InvalidStreamEntryIdError);
  });

  it.each(['', '1', '1-', '-1', '1-2-3', 'a-1', '1.5-0', ' 1-0', '1-0 ', '+1-0'])(
    'refuses %j',
    (raw) => {
      expect(() => parseStreamEntryId(raw)).toThrow(InvalidStreamEntryIdError);
    },
  );

  it('round-trips and agrees with the (ms, seq) lexicographic order', () => {
    fc.assert(
      fc.property(entryId, entryId, (a, b) => {
        const pa = parseStreamEntryId(formatStreamEntryId(a));
        expect(pa).toEqual(a);
        const expected = a.ms === b.ms ? Math.sign(Number(a.seq - b.seq)) : a.ms < b.ms ? -1 : 1;
        expect(compareStreamEntryIds(a, b)).toBe(expected);
        expect(compareStreamEntryIds(b, a)).toBe(-expected);
      }),
    );
  });

  it('an id counts as applied exactly when it is at or before the last applied one', () => {
    fc.assert(
      fc.property(fc.array(entryId, { minLength: 1, maxLength: 30 }), entryId, (applied, next) => {
        const sorted = [...applied].sort(compareStreamEntryIds);
        const last = sorted.at(-1)!;
        for (const id of sorted) expect(alreadyApplied(id, last)).toBe(true);
        expect(alreadyApplied(next, last)).toBe(compareStreamEntryIds(next, last) <= 0);
      }),
    );
    expect(alreadyApplied({ ms: 0n, seq: 1n }, BEFORE_ANY_ENTRY)).toBe(false);
  });
});
