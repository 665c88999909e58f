import { describe, expect, it } from 'vitest';
import { selectShapes, UnknownHandlerShapeError } from './shape-filter.js';

const shapes = [
  { name: "10 ms per message, ordering 'shard'" },
  { name: 'reads payload, per-message handler' },
  { name: 'INSERT per message, plain (pg Pool of 8)' },
  { name: 'INSERT per message, @ExactlyOnce() (pool of 8)' },
];

describe('selectShapes', () => {
  it('selects every shape when the filter is unset or blank', () => {
    expect(selectShapes(shapes, undefined)).toEqual(shapes);
    expect(selectShapes(shapes, ' , ')).toEqual(shapes);
  });

  it('selects the shapes whose name contains a term, case-insensitively, in their order', () => {
    expect(selectShapes(shapes, 'insert').map((s) => s.name)).toEqual([
      'INSERT per message, plain (pg Pool of 8)',
      'INSERT per message, @ExactlyOnce() (pool of 8)',
    ]);
    expect(selectShapes(shapes, 'exactlyonce, READS').map((s) => s.name)).toEqual([
      'reads payload, per-message handler',
      'INSERT per message, @ExactlyOnce() (pool of 8)',
    ]);
  });

  it('refuses a term that matches no shape, naming the shapes', () => {
    expect(() => selectShapes(shapes, 'insert,nope')).toThrow(UnknownHandlerShapeError);
    expect(() => selectShapes(shapes, 'nope')).toThrow(
      /"nope" matches no handler shape.*reads payload/,
    );
  });
});
