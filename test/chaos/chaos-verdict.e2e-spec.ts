import { describe, expect, it } from 'vitest';
import type {
  InvariantName,
  InvariantReport,
  InvariantResult,
} from '../support/invariants/index.js';
import { brokenInvariants } from './harness/chaos-verdict.js';

const NAMES: readonly InvariantName[] = [
  'noLoss',
  'perKeyOrder',
  'singleOwner',
  'zombieSafety',
  'duplicates',
];

function report(broken: Partial<Record<InvariantName, string[]>> = {}): InvariantReport {
  const result = (name: InvariantName): InvariantResult => {
    const examples = broken[name] ?? [];
    return {
      name,
      title: `title of ${name}`,
      ok: examples.length === 0,
      checked: 10,
      violations: examples.length,
      byKind: examples.length === 0 ? {} : { 'some-kind': examples.length },
      notes: {},
      examples,
      basis: 'test',
    };
  };
  return {
    ok: Object.keys(broken).length === 0,
    ackSource: 'ack-records',
    results: Object.fromEntries(NAMES.map((n) => [n, result(n)])) as InvariantReport['results'],
    counts: {} as InvariantReport['counts'],
  };
}

const timeline = ['  +   3.00 s 12:00:03.000 (planned +3.00, took 0 ms) #1 SIGSTOP m2'];

describe('brokenInvariants (the chaos failure message)', () => {
  it('is empty when every invariant holds, whatever the timeline', () => {
    expect(brokenInvariants({ report: report(), idleReport: report(), timeline }, NAMES)).toEqual(
      [],
    );
  });

  it('names each broken invariant of both groups with two examples, then the timeline', () => {
    const lines = brokenInvariants(
      {
        report: report({ singleOwner: ['a', 'b', 'c'] }),
        idleReport: report({ noLoss: ['x'] }),
        timeline,
      },
      NAMES,
    );
    expect(lines).toEqual([
      'title of singleOwner: {"some-kind":3}',
      '  e.g. a',
      '  e.g. b',
      'idle group: title of noLoss: {"some-kind":1}',
      '  e.g. x',
      'what happened:',
      '+   3.00 s 12:00:03.000 (planned +3.00, took 0 ms) #1 SIGSTOP m2',
    ]);
  });

  it('leaves out the invariants a spec does not check', () => {
    const outcome = { report: report({ duplicates: ['d'] }), idleReport: report(), timeline };
    expect(brokenInvariants(outcome, ['noLoss', 'singleOwner'], [])).toEqual([]);
    expect(brokenInvariants(outcome, NAMES, [])[0]).toBe('title of duplicates: {"some-kind":1}');
  });
});
