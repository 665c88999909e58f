import { spawn } from 'node:child_process';
import { connectRedis } from '../test/support/redis-client.js';
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import {
  CoordinatorApi,
  CoordinatorProcess,
  TEST_TOKENS,
} from '../test/support/coordinator-process.js';
import { defaultRedisUrl } from '../test/support/service-process.js';

/**
 * `npm run bench:edge`: heartbeat latency of the coordinator's members while hostile traffic runs
 * (docs/operations.md "Security"). One coordinator with the default limits; MEMBERS members in one
 * group heartbeat at a steady rate; three phases of PHASE_MS each: quiet, a flood of
 * unauthenticated heartbeats with 512 KiB bodies, a flood of group creations with a member token
 * (until MAX_GROUPS, then refused), each flood from EDGE_FLOOD_PROCESSES processes of EDGE_FLOODERS
 * concurrent requests. Prints p50/p99/max per phase and what the floods got back. EDGE_ENV (JSON)
 * adds coordinator environment, e.g. to turn a limit off for a comparison.
 */
const MEMBERS = Number(process.env.EDGE_MEMBERS ?? 20);
const PHASE_MS = Number(process.env.EDGE_PHASE_MS ?? 10_000);
const FLOODERS = Number(process.env.EDGE_FLOODERS ?? 16);
const HEARTBEATS_PER_SECOND = Number(process.env.EDGE_RATE ?? 50);
const MAX_GROUPS = process.env.EDGE_MAX_GROUPS ?? '1000';

interface Phase {
  readonly name: string;
  readonly latencies: number[];
  readonly errors: number;
  readonly flood: Record<string, number>;
}

/** Flooder processes per flood phase (each runs FLOODERS concurrent requests). */
const FLOOD_PROCESSES = Number(process.env.EDGE_FLOOD_PROCESSES ?? 2);

/** A flood in its own process (so the load generator does not slow the measuring loop). */
function startFlooder(
  kind: 'unauthenticated' | 'groups',
  url: string,
  k: number,
): { stop(): Promise<Record<string, number>> } {
  const child = spawn(
    process.execPath,
    [fileURLToPath(import.meta.url), 'flood', kind, url, String(k)],
    {
      stdio: ['pipe', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((r) => child.once('close', () => r()));
  return {
    async stop() {
      child.stdin.end();
      await exited;
      return JSON.parse(out || '{}') as Record<string, number>;
    },
  };
}

/** Child mode: floods until stdin closes, then prints the status counts as JSON. */
async function flood(kind: string, url: string, k: string): Promise<void> {
  const counts: Record<string, number> = {};
  let stop = false;
  process.stdin.on('end', () => (stop = true));
  process.stdin.resume();
  const bigBody = JSON.stringify({ pad: 'x'.repeat(512 * 1024) });
  let n = 0;
  const one = async (): Promise<void> => {
    while (!stop) {
      let status: string;
      try {
        const res =
          kind === 'unauthenticated'
            ? await fetch(`${url}/v1/groups/edge/heartbeat`, {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: bigBody,
              })
            : await fetch(`${url}/v1/groups/flood-${k}-${n++}/heartbeat`, {
                method: 'POST',
                headers: {
                  'content-type': 'application/json',
                  authorization: `Bearer ${TEST_TOKENS.member}`,
                },
                body: JSON.stringify({
                  memberId: 'flooder',
                  memberEpoch: 0,
                  rebalanceTimeoutMs: 30_000,
                  subscribedStreams: ['edge'],
                  ownedShards: [],
                }),
              });
        await res.arrayBuffer();
        status = String(res.status);
      } catch {
        status = 'error';
      }
      counts[status] = (counts[status] ?? 0) + 1;
    }
  };
  await Promise.all(Array.from({ length: FLOODERS }, () => one()));
  process.stdout.write(JSON.stringify(counts));
}

function quantile(sorted: number[], q: number): number {
  if (sorted.length === 0) return Number.NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
}

async function main(): Promise<void> {
  const prefix = `bench-edge-${randomBytes(4).toString('hex')}`;
  const coordinator = await CoordinatorProcess.start({
    prefix,
    env: {
      STREAMS: 'edge:8',
      SESSION_TIMEOUT_MS: '600000',
      MAX_GROUPS,
      // EDGE_ENV='{"AUTH_RATE_LIMIT_MAX":"0"}' compares with a limit turned off
      ...(JSON.parse(process.env.EDGE_ENV ?? '{}') as Record<string, string>),
    },
  });
  const member = new CoordinatorApi(coordinator.url, TEST_TOKENS.member);
  const epochs = new Map<string, number>();
  try {
    for (let i = 0; i < MEMBERS; i++) {
      const id = `m${i}`;
      const res = await member.post<{ memberEpoch: number }>('/v1/groups/edge/heartbeat', {
        memberId: id,
        memberEpoch: 0,
        rebalanceTimeoutMs: 30_000,
        subscribedStreams: ['edge'],
        ownedShards: [],
      });
      epochs.set(id, res.body.memberEpoch);
    }

    const phases: Phase[] = [];
    for (const name of ['quiet', 'unauthenticated flood', 'group-creation flood'] as const) {
      const flooders =
        name === 'quiet'
          ? []
          : Array.from({ length: FLOOD_PROCESSES }, (_, k) =>
              startFlooder(
                name === 'unauthenticated flood' ? 'unauthenticated' : 'groups',
                coordinator.url,
                k,
              ),
            );

      const latencies: number[] = [];
      let errors = 0;
      const until = performance.now() + PHASE_MS;
      const pending: Promise<void>[] = [];
      let next = performance.now();
      let turn = 0;
      while (performance.now() < until) {
        const id = `m${turn++ % MEMBERS}`;
        pending.push(
          (async () => {
            const started = performance.now();
            const res = await member.post<{ memberEpoch: number }>('/v1/groups/edge/heartbeat', {
              memberId: id,
              memberEpoch: epochs.get(id) ?? 0,
            });
            latencies.push(performance.now() - started);
            if (res.status !== 200) errors++;
            else epochs.set(id, res.body.memberEpoch);
          })(),
        );
        next += 1000 / HEARTBEATS_PER_SECOND;
        await new Promise((r) => setTimeout(r, Math.max(0, next - performance.now())));
      }
      await Promise.all(pending);
      const flood: Record<string, number> = {};
      for (const counts of await Promise.all(flooders.map((f) => f.stop()))) {
        for (const [status, n] of Object.entries(counts)) flood[status] = (flood[status] ?? 0) + n;
      }
      latencies.sort((a, b) => a - b);
      phases.push({ name, latencies, errors, flood });
    }

    process.stdout.write(
      `heartbeat latency, ${MEMBERS} members at ${HEARTBEATS_PER_SECOND}/s, ${FLOODERS} flooders, ${PHASE_MS} ms per phase\n`,
    );
    process.stdout.write(
      '| phase | heartbeats | p50 ms | p99 ms | max ms | non-200 | flood answers |\n',
    );
    process.stdout.write('|---|---|---|---|---|---|---|\n');
    for (const p of phases) {
      process.stdout.write(
        `| ${p.name} | ${p.latencies.length} | ${quantile(p.latencies, 0.5).toFixed(1)} | ${quantile(p.latencies, 0.99).toFixed(1)} | ${(p.latencies.at(-1) ?? Number.NaN).toFixed(1)} | ${p.errors} | ${
          Object.entries(p.flood)
            .map(([s, n]) => `${s}×${n}`)
            .join(', ') || '—'
        } |\n`,
      );
    }
  } finally {
    await coordinator.stop();
    const redis = connectRedis(defaultRedisUrl());
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length > 0) await redis.unlink(...keys);
    } while (cursor !== '0');
    redis.disconnect();
  }
}

if (process.argv[2] === 'flood') {
  await flood(process.argv[3] ?? '', process.argv[4] ?? '', process.argv[5] ?? '0');
} else {
  await main();
}
