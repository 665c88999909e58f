import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type BenchReport, renderMarkdown } from '../../bench/support/report.js';

const root = join(import.meta.dirname, '..', '..');
const read = (...parts: string[]): string => readFileSync(join(root, ...parts), 'utf8');

describe('docs/benchmarks.md', () => {
  it('is what `npm run bench -- --render` makes of docs/benchmarks.json and the notes', () => {
    // Prose written into the generated page is lost on the next run: it belongs in
    // bench/benchmarks-notes.md, which the page appends as it is.
    const report = JSON.parse(read('docs', 'benchmarks.json')) as BenchReport;
    const rendered = renderMarkdown(report, read('bench', 'benchmarks-notes.md'));
    expect(
      read('docs', 'benchmarks.md') === rendered,
      'docs/benchmarks.md differs from its rendering: move hand-written text into bench/benchmarks-notes.md, then run `npm run bench -- --render`',
    ).toBe(true);
  });
});
