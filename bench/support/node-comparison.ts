import type { LatencyCase, LatencyResult } from '../scenarios/latency.js';
import type {
  DrainRun,
  NodeLabel,
  ThroughputCase,
  ThroughputResult,
} from '../scenarios/throughput.js';
import { fmt, table, x } from './report-format.js';
import { median, ratio } from './stats.js';

/**
 * The page's "Node releases compared" section of a `--node=20,24` run: the throughput and latency
 * cases of every release side by side, and each later release against the first (CPU per message
 * of ours and of the same raw client, throughput, p99). Empty for a run without `--node=`.
 */

const cpu = (runs: readonly DrainRun[]): number =>
  median(runs.map((r) => r.consumerCpuUsPerMessage));

/** The raw runs of `client` in a case (its fastest when `client` is not measured there). */
function rawOf(c: ThroughputCase, client: string | undefined): readonly DrainRun[] {
  return c.baselines?.find((b) => b.client === client)?.runs ?? c.raw;
}

/** `Node 24` for a label. */
export const nodeName = (n: NodeLabel): string => `Node ${n.major}`;

/** The throughput comparison: one row per regime, layout and batch size. */
export function nodeThroughputTable(t: ThroughputResult): string | undefined {
  const nodes = t.nodes ?? [];
  if (nodes.length === 0) return undefined;
  const [first, ...later] = nodes as [NodeLabel, ...NodeLabel[]];
  const layouts: ThroughputCase[] = [];
  for (const c of t.cases) {
    if (
      !layouts.some(
        (l) => l.regime === c.regime && l.processes === c.processes && l.batchSize === c.batchSize,
      )
    )
      layouts.push(c);
  }
  const find = (l: ThroughputCase, n: NodeLabel): ThroughputCase | undefined =>
    t.cases.find(
      (c) =>
        c.node?.major === n.major &&
        c.regime === l.regime &&
        c.processes === l.processes &&
        c.batchSize === l.batchSize,
    );
  const rows = layouts.map((l) => {
    const base = find(l, first);
    // the raw client compared across releases: the fastest on the first release
    const client = base?.fastest;
    return [
      l.regime ?? 'warm',
      String(l.processes),
      String(l.batchSize),
      ...nodes.map((n) => {
        const c = find(l, n);
        return c ? `${fmt(c.oursMedian)} (**${x(c.ratio)}** vs ${c.fastest ?? 'raw'})` : 'n/a';
      }),
      ...nodes.map((n) => {
        const c = find(l, n);
        return c ? `${fmt(cpu(c.ours), 2)} / ${fmt(cpu(rawOf(c, client)), 2)}` : 'n/a';
      }),
      ...later.flatMap((n) => {
        const c = find(l, n);
        if (!c || !base) return ['n/a', 'n/a', 'n/a'];
        return [
          x(ratio(cpu(c.ours), cpu(base.ours))),
          x(ratio(cpu(rawOf(c, client)), cpu(rawOf(base, client)))),
          x(ratio(c.oursMedian, base.oursMedian)),
        ];
      }),
    ];
  });
  return table(
    [
      'regime',
      'processes',
      'batch',
      ...nodes.map((n) => `${nodeName(n)}: ours msg/s (ours / fastest raw loop)`),
      ...nodes.map(
        (n) => `${nodeName(n)}: consumer CPU µs/msg, ours / raw (the first release's fastest)`,
      ),
      ...later.flatMap((n) => [
        `ours CPU/msg, ${nodeName(n)} / ${nodeName(first)}`,
        `raw CPU/msg, ${nodeName(n)} / ${nodeName(first)}`,
        `ours msg/s, ${nodeName(n)} / ${nodeName(first)}`,
      ]),
    ],
    rows,
  );
}

/** The latency comparison: one row per rate. */
export function nodeLatencyTable(l: LatencyResult): string | undefined {
  const nodes = l.nodes ?? [];
  if (nodes.length === 0) return undefined;
  const [first, ...later] = nodes as [NodeLabel, ...NodeLabel[]];
  const rates = [...new Set(l.cases.map((c) => c.rate))];
  const find = (rate: number, n: NodeLabel): LatencyCase | undefined =>
    l.cases.find((c) => c.rate === rate && c.node?.major === n.major);
  const rows = rates.map((rate) => {
    const base = find(rate, first);
    return [
      fmt(rate),
      ...nodes.map((n) => {
        const c = find(rate, n);
        return c
          ? `${fmt(c.oursP50)} / ${fmt(c.oursP99)}; ${fmt(c.rawP50)} / ${fmt(c.rawP99)} (**${x(c.p99Ratio)}**)`
          : 'n/a';
      }),
      ...later.flatMap((n) => {
        const c = find(rate, n);
        if (!c || !base) return ['n/a', 'n/a'];
        return [x(ratio(c.oursP99, base.oursP99)), x(ratio(c.rawP99, base.rawP99))];
      }),
    ];
  });
  return table(
    [
      'msg/s',
      ...nodes.map((n) => `${nodeName(n)}: ours p50 / p99; raw p50 / p99 ms (p99 ours / raw)`),
      ...later.flatMap((n) => [
        `ours p99, ${nodeName(n)} / ${nodeName(first)}`,
        `raw p99, ${nodeName(n)} / ${nodeName(first)}`,
      ]),
    ],
    rows,
  );
}

/** The section (empty without `--node=`). */
export function nodeComparisonSection(t?: ThroughputResult, l?: LatencyResult): string[] {
  const tp = t ? nodeThroughputTable(t) : undefined;
  const lat = l ? nodeLatencyTable(l) : undefined;
  if (tp === undefined && lat === undefined) return [];
  const nodes = t?.nodes ?? l?.nodes ?? [];
  const out = [
    '## Node releases compared',
    '',
    `The consumer processes (members and raw loops) and the latency producer ran on each of ${nodes.map((n) => `${nodeName(n)} (${n.version})`).join(', ')} in this one run, their runs interleaved in one rotating order, so load drift hits every release alike; the runner, the coordinator and the prefilling publisher ran on the runner's Node. CPU per message is the consumer processes' own (user + system), which the machine's load distorts least; the raw client compared across releases is the fastest one on ${nodeName(nodes[0] as NodeLabel)}.`,
    '',
  ];
  if (tp !== undefined) out.push(tp, '');
  if (lat !== undefined) out.push(lat, '');
  return out;
}
