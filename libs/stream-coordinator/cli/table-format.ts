/**
 * Renders rows as a plain text table: a header row, columns padded to their widest cell, two
 * spaces between columns, no trailing spaces.
 */
export function formatTable(
  header: readonly string[],
  rows: ReadonlyArray<readonly string[]>,
): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)].join('\n');
}

/** `[{stream, shards}]` as `orders:0-3,5 payments:1` (`-` when empty). */
export function formatShards(
  entries: ReadonlyArray<{ stream: string; shards: readonly number[] }> | undefined,
): string {
  const parts = (entries ?? [])
    .filter((e) => e.shards.length > 0)
    .map((e) => `${e.stream}:${ranges(e.shards)}`);
  return parts.length > 0 ? parts.join(' ') : '-';
}

/** Ascending ids as ranges: `[0,1,2,5]` → `0-2,5`. */
export function ranges(ids: readonly number[]): string {
  const sorted = [...ids].sort((a, b) => a - b);
  const out: string[] = [];
  for (let i = 0; i < sorted.length;) {
    let j = i;
    while (j + 1 < sorted.length && (sorted[j + 1] as number) === (sorted[j] as number) + 1) j++;
    out.push(i === j ? String(sorted[i]) : `${sorted[i]}-${sorted[j]}`);
    i = j + 1;
  }
  return out.join(',');
}
