import { describe, expect, it } from 'vitest';
import type { LatencyCase, LatencyResult } from '../scenarios/latency.js';
import type {
  DrainRun,
  NodeLabel,
  ThroughputCase,
  ThroughputResult,
} from '../scenarios/throughput.js';
import { nodeComparisonSection, nodeLatencyTable, nodeThroughputTable } from './node-comparison.js';

const N20: NodeLabel = { major: 20, version: 'v20.20.2' };
const N24: NodeLabel = { major: 24, version: 'v24.22.3' };

function run(perSecond: number, cpuUs: number): DrainRun {
  return {
    messages: 1000,
    ms: 1000,
    perSecond,
    redis: { commands: 0, cpuUs: 0 } as DrainRun['redis'],
    consumerCpuUsPerMessage: cpuUs,
    peakRssKb: 0,
  };
}

function tpCase(
  node: NodeLabel,
  ours: [number, number],
  raws: Record<string, [number, number]>,
  fastest: string,
): ThroughputCase {
  const baselines = Object.entries(raws).map(([client, [perSecond, cpu]]) => ({
    client: client as 'ioredis6',
    runs: [run(perSecond, cpu)],
    median: perSecond,
    ratio: ours[0] / perSecond,
  }));
  const fast = baselines.find((b) => b.client === fastest) as (typeof baselines)[number];
  return {
    regime: 'warm',
    node,
    processes: 1,
    batchSize: 100,
    ours: [run(ours[0], ours[1])],
    raw: fast.runs,
    oursMedian: ours[0],
    rawMedian: fast.median,
    ratio: fast.ratio,
    memberIdleRssKb: 0,
    fastest: fast.client,
    baselines,
  };
}

describe('nodeThroughputTable', () => {
  it('is undefined for a run without --node=', () => {
    expect(nodeThroughputTable({ shards: 8, cases: [], peers: [] })).toBeUndefined();
  });

  it('puts the releases side by side and compares the same raw client across them', () => {
    const t: ThroughputResult = {
      shards: 8,
      peers: [],
      nodes: [N20, N24],
      cases: [
        tpCase(N20, [40_000, 4], { ioredis6: [50_000, 2], 'node-redis': [45_000, 3] }, 'ioredis6'),
        // on 24 node-redis is the fastest, but the cross-release ratio stays on ioredis6
        tpCase(
          N24,
          [44_000, 3],
          { ioredis6: [48_000, 2.5], 'node-redis': [55_000, 2] },
          'node-redis',
        ),
      ],
    };
    const lines = (nodeThroughputTable(t) as string).split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toBe(
      "| regime | processes | batch | Node 20: ours msg/s (ours / fastest raw loop) | Node 24: ours msg/s (ours / fastest raw loop) | Node 20: consumer CPU µs/msg, ours / raw (the first release's fastest) | Node 24: consumer CPU µs/msg, ours / raw (the first release's fastest) | ours CPU/msg, Node 24 / Node 20 | raw CPU/msg, Node 24 / Node 20 | ours msg/s, Node 24 / Node 20 |",
    );
    expect(lines[2]).toBe(
      '| warm | 1 | 100 | 40,000 (**0.80×** vs ioredis6) | 44,000 (**0.80×** vs node-redis) | 4 / 2 | 3 / 2.5 | 0.75× | 1.25× | 1.10× |',
    );
  });

  it('says n/a for a layout one release lacks', () => {
    const t: ThroughputResult = {
      shards: 8,
      peers: [],
      nodes: [N20, N24],
      cases: [tpCase(N20, [40_000, 4], { ioredis6: [50_000, 2] }, 'ioredis6')],
    };
    expect((nodeThroughputTable(t) as string).split('\n')[2]).toBe(
      '| warm | 1 | 100 | 40,000 (**0.80×** vs ioredis6) | n/a | 4 / 2 | n/a | n/a | n/a | n/a |',
    );
  });
});

describe('nodeLatencyTable', () => {
  const lat = (node: NodeLabel, rate: number, ours: number, raw: number): LatencyCase => ({
    rate,
    node,
    ours: [],
    raw: [],
    oursP50: ours / 2,
    oursP99: ours,
    rawP50: raw / 2,
    rawP99: raw,
    p99Ratio: ours / raw,
  });

  it('gives one row per rate with each release and the p99 ratios between them', () => {
    const l: LatencyResult = {
      shards: 8,
      seconds: 3,
      nodes: [N20, N24],
      cases: [
        lat(N20, 1000, 4, 2),
        lat(N24, 1000, 3, 2),
        lat(N20, 10_000, 8, 4),
        lat(N24, 10_000, 8, 5),
      ],
    };
    const lines = (nodeLatencyTable(l) as string).split('\n');
    expect(lines.slice(2)).toEqual([
      '| 1,000 | 2 / 4; 1 / 2 (**2.00×**) | 1.5 / 3; 1 / 2 (**1.50×**) | 0.75× | 1.00× |',
      '| 10,000 | 4 / 8; 2 / 4 (**2.00×**) | 4 / 8; 2.5 / 5 (**1.60×**) | 1.00× | 1.25× |',
    ]);
  });
});

describe('nodeComparisonSection', () => {
  it('is empty without --node= (the page is unchanged)', () => {
    expect(nodeComparisonSection({ shards: 8, cases: [], peers: [] }, undefined)).toEqual([]);
    expect(nodeComparisonSection(undefined, undefined)).toEqual([]);
  });

  it('names every release with its exact version', () => {
    const section = nodeComparisonSection(undefined, {
      shards: 8,
      seconds: 3,
      nodes: [N20, N24],
      cases: [],
    }).join('\n');
    expect(section).toContain('## Node releases compared');
    expect(section).toContain('Node 20 (v20.20.2), Node 24 (v24.22.3)');
  });
});
