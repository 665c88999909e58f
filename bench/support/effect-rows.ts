/** What the effect table holds after a drain. */
export interface EffectRowCount {
  /** Rows in the table. */
  readonly rows: number;
  /** Distinct (shard, entry id) pairs among them. */
  readonly distinct: number;
}

/**
 * Undefined when the effect table holds exactly one row per message (`messages` rows, all
 * distinct), else what is wrong with it.
 */
export function effectRowMismatch(count: EffectRowCount, messages: number): string | undefined {
  if (count.rows === messages && count.distinct === messages) return undefined;
  const problems: string[] = [];
  if (count.rows !== count.distinct)
    problems.push(`${count.rows - count.distinct} duplicate effect rows`);
  if (count.distinct < messages) problems.push(`${messages - count.distinct} messages without one`);
  if (count.distinct > messages)
    problems.push(`${count.distinct - messages} rows for entries not published in this run`);
  return `effect table: ${count.rows} rows (${count.distinct} distinct) for ${messages} messages: ${problems.join(', ')}`;
}
