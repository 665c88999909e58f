import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { checkRecords } from '../../scripts/demo/record-check.js';

describe('demo record check', () => {
  const dirs: string[] = [];
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });
  const file = (lines: readonly object[]): string => {
    const dir = mkdtempSync(join(tmpdir(), 'rsc-demo-check-'));
    dirs.push(dir);
    const path = join(dir, 'records.jsonl');
    writeFileSync(path, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
    return path;
  };
  const handled = (k: string, q: number, t0: number) => ({
    m: 'w',
    st: 'orders',
    s: 0,
    k,
    id: `${t0}-0`,
    q,
    d: 1,
    t0,
    t1: t0 + 1,
  });

  it('counts handled lines only: ack lines in the same file are neither messages nor redeliveries', () => {
    const records = file([
      handled('a', 0, 1),
      { a: ['1-0'], m: 'w', s: 0, st: 'orders', t0: 2, t: 3 },
      handled('a', 1, 4),
      handled('b', 0, 5),
      { a: ['4-0', '5-0'], m: 'w', s: 0, st: 'orders', t0: 6, t: 7 },
    ]);
    const summary = checkRecords(
      [records],
      new Map([
        ['a', 2],
        ['b', 1],
      ]),
    );
    expect(summary).toMatchObject({ distinct: 3, duplicates: 0, missing: 0, orderViolations: 0 });
  });

  it('still reports redeliveries, missing messages and order violations', () => {
    const records = file([handled('a', 1, 1), handled('a', 0, 2), handled('a', 1, 3)]);
    const summary = checkRecords([records], new Map([['a', 3]]));
    expect(summary).toMatchObject({ distinct: 2, duplicates: 1, missing: 1, orderViolations: 1 });
  });
});
