import type { InvariantName, InvariantReport } from '../../support/invariants/index.js';
import type { ChaosOutcome } from './chaos-run.js';

/** How many example violations each broken invariant shows. */
const EXAMPLES = 2;

/**
 * One line per invariant a chaos run broke, with its kinds and first examples, then what the fault
 * actions did and when: the failure message a CI log's tail shows, so a failure that does not
 * recur can still be read (the run's files are gone with the CI machine). Empty when every listed
 * invariant of both groups holds.
 */
export function brokenInvariants(
  outcome: Pick<ChaosOutcome, 'report' | 'idleReport' | 'timeline'>,
  names: readonly InvariantName[],
  idleNames: readonly InvariantName[] = names,
): string[] {
  const lines = [
    ...broken(outcome.report, names, ''),
    ...broken(outcome.idleReport, idleNames, 'idle group: '),
  ];
  if (lines.length === 0) return [];
  return [...lines, 'what happened:', ...outcome.timeline.map((l) => l.trim())];
}

function broken(report: InvariantReport, names: readonly InvariantName[], label: string): string[] {
  return names.flatMap((name) => {
    const result = report.results[name];
    if (Object.keys(result.byKind).length === 0) return [];
    return [
      `${label}${result.title}: ${JSON.stringify(result.byKind)}`,
      ...result.examples.slice(0, EXAMPLES).map((e) => `  e.g. ${e}`),
    ];
  });
}
