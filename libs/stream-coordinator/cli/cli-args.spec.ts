import { describe, expect, it } from 'vitest';
import { intOption, parseArgs } from './cli-args.js';
import { CliUsageError } from './cli.errors.js';
import { formatShards, formatTable, ranges } from './table-format.js';

describe('parseArgs', () => {
  it('splits positionals, flags and valued options (both spellings), aliases and --', () => {
    const a = parseArgs(
      ['events', 'tail', 'g', '-n', '5', '--follow', '--url=http://x:1', '--', '--weird'],
      ['follow', 'json'],
      ['limit', 'url'],
    );
    expect(a.positionals).toEqual(['events', 'tail', 'g', '--weird']);
    expect([...a.flags]).toEqual(['follow']);
    expect(Object.fromEntries(a.values)).toEqual({ limit: '5', url: 'http://x:1' });
  });

  it('refuses unknown options, missing values and values on flags', () => {
    expect(() => parseArgs(['--shard', '3'], [], ['shards'])).toThrow(
      /unknown option --shard; run "rsc --help"/,
    );
    expect(() => parseArgs(['--shards'], [], ['shards'])).toThrow(/--shards needs a value/);
    expect(() => parseArgs(['--json=yes'], ['json'], [])).toThrow(CliUsageError);
  });

  it('intOption checks the range and says what was wrong', () => {
    const a = parseArgs(['--shards', 'x'], [], ['shards']);
    expect(() => intOption(a, 'shards')).toThrow(
      /--shards must be an integer between 1 and 1000000000 \(got "x"\)/,
    );
    expect(() => intOption(parseArgs([], [], []), 'shards')).toThrow(/--shards is required/);
    expect(intOption(parseArgs([], [], []), 'limit', 20)).toBe(20);
  });
});

describe('table formatting', () => {
  it('pads columns and writes shard sets as ranges', () => {
    expect(
      formatTable(
        ['A', 'LONGER'],
        [
          ['xyz', '1'],
          ['q', '22'],
        ],
      ),
    ).toBe('A    LONGER\nxyz  1\nq    22');
    expect(ranges([5, 0, 1, 2, 7, 8])).toBe('0-2,5,7-8');
    expect(
      formatShards([
        { stream: 'orders', shards: [0, 1, 3] },
        { stream: 'p', shards: [] },
      ]),
    ).toBe('orders:0-1,3');
    expect(formatShards([])).toBe('-');
  });
});
