import { round } from './stats.js';

/** Formatting shared by the benchmark page's tables. */

/** A number for a table cell (`n/a` when not finite). */
export const fmt = (n: number, digits?: number): string => {
  if (!Number.isFinite(n)) return 'n/a';
  const value = digits === undefined ? round(n) : Number(n.toFixed(digits));
  return value.toLocaleString('en-US', { maximumFractionDigits: 3 });
};

/** A ratio, e.g. `0.93×`. */
export const x = (n: number): string => (Number.isFinite(n) ? `${n.toFixed(2)}×` : 'n/a');

/** A markdown table. */
export const table = (head: readonly string[], rows: ReadonlyArray<readonly string[]>): string =>
  [
    `| ${head.join(' | ')} |`,
    `|${head.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ].join('\n');
