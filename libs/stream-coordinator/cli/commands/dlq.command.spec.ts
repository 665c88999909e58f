import { describe, expect, it } from 'vitest';
import { parseArgs } from '../cli-args.js';
import { CliUsageError } from '../cli.errors.js';
import { DLQ_FILTER_VALUES, filterFromArgs, idsFromArgs, parseTimeOption } from './dlq.command.js';

const NOW = Date.parse('2026-01-31T12:00:00Z');
const args = (...argv: string[]) => parseArgs(argv, ['all', 'yes'], [...DLQ_FILTER_VALUES, 'ids']);

describe('rsc dlq options', () => {
  it('--since/--until: a duration ago, an ISO-8601 time or ms', () => {
    expect(parseTimeOption('since', '90s', NOW)).toBe(NOW - 90_000);
    expect(parseTimeOption('since', '15m', NOW)).toBe(NOW - 900_000);
    expect(parseTimeOption('since', '2h', NOW)).toBe(NOW - 7_200_000);
    expect(parseTimeOption('since', '7d', NOW)).toBe(NOW - 7 * 86_400_000);
    expect(parseTimeOption('until', '2026-01-30T00:00:00Z', NOW)).toBe(
      Date.parse('2026-01-30T00:00:00Z'),
    );
    expect(parseTimeOption('until', '1700000000000', NOW)).toBe(1_700_000_000_000);
    for (const bad of ['yesterday', '2w', '-1h', '1.5h', '2026-13-45']) {
      expect(() => parseTimeOption('since', bad, NOW)).toThrow(CliUsageError);
      expect(() => parseTimeOption('since', bad, NOW)).toThrow(/--since must be a duration ago/);
    }
  });

  it('filters become the API fields; a bad reason is refused before any request', () => {
    expect(
      filterFromArgs(
        args(
          '--group',
          'billing',
          '--reason',
          'non-retryable',
          '--error',
          'declined',
          '--since',
          '1h',
        ),
        NOW,
      ),
    ).toEqual({
      group: 'billing',
      reason: 'non-retryable',
      error: 'declined',
      from: NOW - 3_600_000,
    });
    expect(filterFromArgs(args(), NOW)).toEqual({});
    expect(() => filterFromArgs(args('--reason', 'bored'), NOW)).toThrow(
      /--reason must be one of max-deliveries, undecodable, non-retryable/,
    );
  });

  it('--ids: a comma-separated list', () => {
    expect(idsFromArgs(args('--ids', '1-0, 2-0,,3-0'))).toEqual(['1-0', '2-0', '3-0']);
    expect(idsFromArgs(args())).toBeUndefined();
    expect(() => idsFromArgs(args('--ids', ','))).toThrow(/--ids needs at least one id/);
  });
});
