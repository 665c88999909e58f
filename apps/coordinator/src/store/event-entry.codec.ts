import type { GroupEventEntry } from '@redis-stream-coordinator/nestjs/protocol';

/** The `field, value, …` list of a stream entry as an object (later fields win). */
export function entryFields(fields: readonly string[]): Record<string, string> {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i] as string] = fields[i + 1] as string;
  return f;
}

/** One entry of a group's event log (`XRANGE` / `XREVRANGE` reply item) as the API shows it. */
export function groupEventEntry(id: string, fields: readonly string[]): GroupEventEntry {
  const f = entryFields(fields);
  return {
    id,
    type: f.type ?? 'UNKNOWN',
    at: new Date(Number(f.at ?? 0)).toISOString(),
    groupEpoch: Number(f.groupEpoch ?? 0),
    data: JSON.parse(f.data ?? '{}') as Record<string, unknown>,
  };
}
