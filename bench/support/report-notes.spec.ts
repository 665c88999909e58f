import { describe, expect, it } from 'vitest';
import { splitNotes } from './report.js';

describe('splitNotes', () => {
  it('splits the notes at their first second-level heading', () => {
    expect(splitNotes('A preface.\n\n## First\ntext\n## Second\n')).toEqual({
      preface: 'A preface.',
      body: '## First\ntext\n## Second',
    });
  });

  it('has no preface when the notes start with a heading', () => {
    expect(splitNotes('## First\ntext\n')).toEqual({ preface: '', body: '## First\ntext' });
  });
});
