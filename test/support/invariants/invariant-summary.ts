import type { InvariantName, InvariantReport } from './invariant-report.types.js';

const ORDER: readonly InvariantName[] = [
  'noLoss',
  'perKeyOrder',
  'singleOwner',
  'zombieSafety',
  'duplicates',
];

/**
 * A printable summary: one table row per invariant (verdict, items checked, violations by kind,
 * notes, basis), the run's totals, handlings per member, then the first violations.
 */
export function formatInvariantReport(report: InvariantReport, title = 'invariants'): string {
  const rows = ORDER.map((name) => {
    const r = report.results[name];
    const kinds = Object.entries(r.byKind)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    const notes = Object.entries(r.notes)
      .map(([k, n]) => `${k} ${n}`)
      .join(', ');
    return [
      r.title,
      r.ok ? 'ok' : 'FAIL',
      String(r.checked),
      r.violations === 0 ? '0' : `${r.violations} (${kinds})`,
      notes || '-',
      r.basis,
    ];
  });
  const header = ['invariant', 'result', 'checked', 'violations', 'notes', 'basis'];
  const widths = header.map((h, i) =>
    Math.max(h.length, ...rows.map((r) => (r[i] as string).length)),
  );
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => c.padEnd(widths[i] as number))
      .join('  ')
      .trimEnd();
  const c = report.counts;
  const out = [
    `${title}: ${report.ok ? 'ALL HOLD' : 'VIOLATED'} (acked from ${report.ackSource})`,
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `produced ${c.produced} · handled ${c.handledRecords} (distinct ${c.distinctHandled}, duplicates ${c.duplicates}, redelivered ${c.redeliveredHandlings}) · ` +
      `acks ${c.ackRecords} records / ${c.ackedIds} ids · dead-lettered ${c.deadLettered} (never handled ${c.deadLetteredUnhandled}) · pending at end ${c.pendingAtEnd} · ` +
      `zombie in-flight ${c.zombieInFlight} · keys ${c.keys} · shards ${c.shards} · hand-offs ${c.handOffs}` +
      (c.minHandOffGapMs === null ? '' : ` (min gap ${c.minHandOffGapMs.toFixed(2)} ms)`),
    `per member: ${Object.entries(c.handledByMember)
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([m, n]) => `${m} ${n}`)
      .join(' · ')}`,
  ];
  for (const name of ORDER) {
    const r = report.results[name];
    if (r.examples.length === 0) continue;
    out.push(
      '',
      `${r.title} — first ${r.examples.length} of ${r.violations}:`,
      ...r.examples.map((e) => `  ${e}`),
    );
  }
  return out.join('\n');
}
