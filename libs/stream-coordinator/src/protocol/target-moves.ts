import type { GroupEventEntry } from './wire.types.js';

/**
 * One shard move of a `TARGET_ASSIGNMENT_CHANGED` event (`data.moves`).
 *
 * @publicApi
 */
export interface TargetMove {
  readonly stream: string;
  readonly shard: number;
  readonly from: string | null;
  readonly to: string | null;
}

/**
 * The first `limit` moves of a `TARGET_ASSIGNMENT_CHANGED` event as `stream/shard from→to` (`∅`
 * for nobody), and how many more the event counted (`data.moved`) than were listed. Shared by
 * the dashboard's timeline and `rsc events`.
 *
 * @publicApi
 */
export function listTargetMoves(
  data: GroupEventEntry['data'],
  limit: number,
): { readonly listed: readonly string[]; readonly more: number } {
  const moves = (data.moves as readonly TargetMove[] | undefined) ?? [];
  const listed = moves
    .slice(0, limit)
    .map((m) => `${m.stream}/${m.shard} ${m.from ?? '∅'}→${m.to ?? '∅'}`);
  return { listed, more: Number(data.moved ?? moves.length) - listed.length };
}
