import { describe, expect, it } from 'vitest';
import { effectRowMismatch } from './effect-rows.js';

describe('effectRowMismatch', () => {
  it('accepts exactly one row per message', () => {
    expect(effectRowMismatch({ rows: 20_000, distinct: 20_000 }, 20_000)).toBeUndefined();
  });

  it('reports duplicates', () => {
    expect(effectRowMismatch({ rows: 20_003, distinct: 20_000 }, 20_000)).toBe(
      'effect table: 20003 rows (20000 distinct) for 20000 messages: 3 duplicate effect rows',
    );
  });

  it('reports messages without a row, and duplicates hiding them', () => {
    expect(effectRowMismatch({ rows: 10, distinct: 9 }, 10)).toBe(
      'effect table: 10 rows (9 distinct) for 10 messages: 1 duplicate effect rows, 1 messages without one',
    );
  });

  it('reports rows beyond the messages published', () => {
    expect(effectRowMismatch({ rows: 12, distinct: 12 }, 10)).toMatch(
      /2 rows for entries not published in this run$/,
    );
  });
});
