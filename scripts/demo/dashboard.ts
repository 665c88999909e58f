import type { DescribedGroup } from '@redis-stream-coordinator/nestjs/protocol';

/** One worker as the dashboard shows it. */
export interface WorkerRow {
  readonly name: string;
  readonly state: 'running' | 'stopping' | 'stopped';
  readonly handled: number;
  readonly memberId: string | null;
}

/** One shard's lag and pending count (from XINFO GROUPS). */
export interface ShardRow {
  readonly shard: number;
  readonly lag: number | null;
  readonly pending: number;
  readonly owner: string | null;
}

/** Everything drawn on one frame. */
export interface DashboardFrame {
  readonly elapsedS: number;
  readonly phase: string;
  readonly group: DescribedGroup | null;
  readonly workers: readonly WorkerRow[];
  readonly shards: readonly ShardRow[];
  readonly published: number;
  readonly events: readonly string[];
}

const pad = (s: string | number, n: number): string => String(s).padEnd(n).slice(0, n);
const bold = (s: string): string => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);

/** Renders a frame as text (a refreshing table on a terminal). */
export function renderFrame(f: DashboardFrame): string {
  const lines: string[] = [];
  lines.push(bold(`Redis Stream Coordinator demo — ${f.elapsedS.toFixed(1)} s — ${f.phase}`));
  const g = f.group;
  lines.push(
    g
      ? `group ${g.groupId}: ${g.state}, group epoch ${g.groupEpoch}, assignment epoch ${g.assignmentEpoch}, assignor ${g.assignor}; published ${f.published}`
      : `group: (not created yet); published ${f.published}`,
  );
  lines.push('');
  lines.push(
    bold(
      `${pad('worker', 10)}${pad('state', 10)}${pad('member', 8)}${pad('epoch', 7)}${pad('member state', 20)}${pad('owned shards', 18)}${pad('revoking', 10)}handled`,
    ),
  );
  for (const w of f.workers) {
    const m = g?.members.find((x) => x.memberId === w.memberId);
    const owned = m?.assignment.flatMap((a) => a.shards).join(',') ?? '';
    const revoking = m?.pendingRevocation.flatMap((a) => a.shards).join(',') ?? '';
    lines.push(
      `${pad(w.name, 10)}${pad(w.state, 10)}${pad(m ? 'yes' : '-', 8)}${pad(m?.memberEpoch ?? '-', 7)}${pad(m?.state ?? '-', 20)}${pad(owned || '-', 18)}${pad(revoking || '-', 10)}${w.handled}`,
    );
  }
  lines.push('');
  lines.push(bold(`${pad('shard', 8)}${pad('owner', 10)}${pad('lag', 8)}pending`));
  for (const s of f.shards) {
    lines.push(`${pad(s.shard, 8)}${pad(s.owner ?? '-', 10)}${pad(s.lag ?? '?', 8)}${s.pending}`);
  }
  lines.push('');
  lines.push(bold('recent events'));
  for (const e of f.events.slice(-6)) lines.push(`  ${e}`);
  return lines.join('\n');
}
