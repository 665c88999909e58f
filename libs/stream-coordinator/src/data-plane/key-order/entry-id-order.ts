/**
 * Compares two stream entry ids `<ms>-<seq>` in canonical form (no leading zeros) as Redis orders
 * them: exact past 2^53 too (longer digit runs are larger). Negative when `a` comes first.
 */
export function compareEntryIds(a: string, b: string): number {
  const dashA = a.indexOf('-');
  const dashB = b.indexOf('-');
  // (no substrings: this runs for every entry taken in)
  const byMs = compareDigits(a, 0, dashA, b, 0, dashB);
  if (byMs !== 0) return byMs;
  return compareDigits(a, dashA + 1, a.length, b, dashB + 1, b.length);
}

/** Compares the digit runs `a[fromA, toA)` and `b[fromB, toB)` as numbers. */
function compareDigits(
  a: string,
  fromA: number,
  toA: number,
  b: string,
  fromB: number,
  toB: number,
): number {
  const length = toA - fromA;
  if (length !== toB - fromB) return length - (toB - fromB);
  for (let i = 0; i < length; i++) {
    const diff = a.charCodeAt(fromA + i) - b.charCodeAt(fromB + i);
    if (diff !== 0) return diff;
  }
  return 0;
}
