/** One consumer group of a stream, as `XINFO GROUPS` reports it. @internal */
export interface XinfoGroup {
  readonly name: string;
  /** Entries delivered and not acknowledged. */
  readonly pending: number;
  readonly lastDeliveredId: string;
  /** Entries not delivered yet; `null` when Redis cannot tell (Redis < 7, SETID, trimmed gaps). */
  readonly lag: number | null;
}

/**
 * The consumer groups of an `XINFO GROUPS` reply by name (none when the reply is not a list).
 *
 * @internal
 */
export function parseXinfoGroups(reply: unknown): Map<string, XinfoGroup> {
  const out = new Map<string, XinfoGroup>();
  if (!Array.isArray(reply)) return out;
  for (const entry of reply) {
    if (!Array.isArray(entry)) continue;
    const fields = new Map<string, string | number | null>();
    for (let i = 0; i + 1 < entry.length; i += 2)
      fields.set(String(entry[i]), scalar(entry[i + 1]));
    const name = String(fields.get('name'));
    const lag = fields.get('lag');
    out.set(name, {
      name,
      pending: Number(fields.get('pending') ?? 0),
      lastDeliveredId: String(fields.get('last-delivered-id') ?? '0-0'),
      lag: lag === null || lag === undefined ? null : Number(lag),
    });
  }
  return out;
}

/** An XINFO reply value as a string, number or null (nested replies are not expected here). */
function scalar(value: unknown): string | number | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number' || typeof value === 'string') return value;
  if (Buffer.isBuffer(value)) return value.toString();
  return JSON.stringify(value);
}
