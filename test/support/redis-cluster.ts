import { execFile } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Redis } from 'ioredis';
import { findExecutable } from './find-executable.js';
import { freePortPair } from './free-port.js';
import { trackRedisProcess } from './redis-process-tracker.js';
import { type RedisServerProcess, spawnRedisServer } from './redis-server-process.js';
import { RedisServerStartError } from './redis-server-start.error.js';
import { createTempDir } from './temp-dir.js';
import { waitFor, waitForNoProblems } from './wait.js';
import { connectRedis } from './redis-client.js';

const execFileAsync = promisify(execFile);

/** One master of the test cluster. */
export interface ClusterNode {
  /** Always `127.0.0.1`. */
  readonly host: string;
  /** Client port (the cluster bus listens on `port + 10000`). */
  readonly port: number;
}

/** What {@link RedisClusterHandle.migrateKeySlot} did. */
export interface SlotMigration {
  /** The Redis Cluster hash slot of the key (0..16383). */
  readonly slot: number;
  /** The master that owned the slot before. */
  readonly from: ClusterNode;
  /** The master that owns it now. */
  readonly to: ClusterNode;
  /** How many keys of the slot were moved with MIGRATE. */
  readonly keysMoved: number;
}

/** A running 3-master Redis Cluster (no replicas) on free ports of 127.0.0.1. */
export interface RedisClusterHandle {
  /** The masters, as seed nodes for an ioredis `Cluster`. */
  readonly nodes: readonly ClusterNode[];
  /** `redis+cluster://127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3` (docs/protocol.md §10). */
  readonly url: string;
  /** The temp dir holding each node's `nodes.conf` and log (removed by `stop()`). */
  readonly dir: string;
  /** The master that currently serves `key`'s slot. */
  ownerOf(key: string): Promise<ClusterNode>;
  /**
   * Moves the slot of `key` (with its keys) to another master (`to`, default the next node)
   * while the cluster stays up, and resolves once every node agrees on the new owner.
   */
  migrateKeySlot(key: string, to?: ClusterNode): Promise<SlotMigration>;
  /**
   * What keeps a message from crossing the cluster bus right now, one line per problem ("p1
   * sees 127.0.0.1:p2 disconnected (master)"); empty when every node has a live link to every
   * other one. For failure messages: a `PUBLISH` reaches the other nodes over these links, and a
   * link being re-established (after a node answered no ping for half the node timeout) drops it.
   */
  busProblems(): Promise<string[]>;
  /** Stops every node and removes the data dir. Idempotent. */
  stop(): Promise<void>;
  /** Same as `stop()`. */
  dispose(): Promise<void>;
}

/** Options of {@link startRedisCluster}. */
export interface RedisClusterOptions {
  /** Number of masters; default 3 (the minimum Redis Cluster accepts). */
  masters?: number;
  /** How long to wait for the cluster to be ready (see {@link startRedisCluster}); default 30 s. */
  readyTimeoutMs?: number;
  /** Extra environment of master `index` (0-based), e.g. a clock shim's. */
  nodeEnv?: (index: number) => Readonly<Record<string, string>>;
}

const HOST = '127.0.0.1';

/**
 * Starts `masters` `redis-server --cluster-enabled yes` processes, joins them with
 * `redis-cli --cluster create ... --cluster-replicas 0 --cluster-yes` and waits until every
 * node reports `cluster_state:ok` and has a live bus link to every other node, out of its
 * handshake (`cluster_state:ok` alone comes earlier: a node still shaking hands with another
 * drops what that one publishes, and sends it nothing). Stop it with `stop()` in `afterAll` (or
 * {@link stopAllRedisProcesses}); its processes are also killed at process exit.
 */
export async function startRedisCluster(
  options: RedisClusterOptions = {},
): Promise<RedisClusterHandle> {
  const masters = options.masters ?? 3;
  const readyTimeoutMs = options.readyTimeoutMs ?? 30_000;
  const redisCli = findExecutable('redis-cli');
  if (!redisCli) throw new RedisServerStartError('redis-cli was not found on PATH');
  const dir = createTempDir('cluster');
  const servers: RedisServerProcess[] = [];
  const admins: Redis[] = [];
  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    untrack();
    for (const admin of admins) admin.disconnect();
    await Promise.all(servers.map((server) => server.stop()));
    dir.remove();
  };
  const untrack = trackRedisProcess({ dispose: stop });
  try {
    for (let i = 0; i < masters; i++) {
      servers.push(await startClusterNode(dir.path, options.nodeEnv?.(i) ?? {}));
    }
    const nodes = servers.map((s) => ({ host: HOST, port: s.port }));
    await execFileAsync(
      redisCli,
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `${n.host}:${n.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ],
      { timeout: readyTimeoutMs },
    );
    for (const node of nodes) admins.push(adminClient(node));
    const busProblems = () => clusterBusProblems(nodes, admins);
    await waitForNoProblems(
      async () => {
        const infos = await Promise.all(admins.map((a) => a.call('CLUSTER', 'INFO')));
        const notOk = nodes.filter((_, i) => !String(infos[i]).includes('cluster_state:ok'));
        return [
          ...notOk.map((n) => `${n.port}: cluster_state is not ok`),
          ...(await busProblems()),
        ];
      },
      {
        timeoutMs: readyTimeoutMs,
        message: 'cluster_state:ok and live bus links on every node',
        retryErrors: true,
      },
    );
    const ids = await Promise.all(admins.map(async (a) => String(await a.call('CLUSTER', 'MYID'))));
    return {
      nodes,
      url: `redis+cluster://${nodes.map((n) => `${n.host}:${n.port}`).join(',')}`,
      dir: dir.path,
      ownerOf: async (key) =>
        ownerOfSlot(admins[0] as Redis, await keySlot(admins[0] as Redis, key)),
      migrateKeySlot: (key, to) => migrateKeySlot({ nodes, admins, ids }, key, to),
      busProblems,
      stop,
      dispose: stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function startClusterNode(
  root: string,
  env: Readonly<Record<string, string>>,
): Promise<RedisServerProcess> {
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePortPair();
    const dir = join(root, String(port));
    mkdirSync(dir);
    try {
      return await spawnRedisServer({
        port,
        dir,
        args: [
          '--cluster-enabled',
          'yes',
          '--cluster-config-file',
          'nodes.conf',
          '--cluster-node-timeout',
          '5000',
          '--save',
          '',
          '--appendonly',
          'no',
        ],
        env,
      });
    } catch (error) {
      lastError = error; // most likely a port taken between the check and the bind: retry
    }
  }
  throw lastError;
}

interface ClusterState {
  readonly nodes: readonly ClusterNode[];
  readonly admins: readonly Redis[];
  readonly ids: readonly string[];
}

async function migrateKeySlot(
  state: ClusterState,
  key: string,
  to?: ClusterNode,
): Promise<SlotMigration> {
  const first = state.admins[0] as Redis;
  const slot = await keySlot(first, key);
  const from = await ownerOfSlot(first, slot);
  const source = indexOf(state.nodes, from);
  const target = to ? indexOf(state.nodes, to) : (source + 1) % state.nodes.length;
  if (target === source) {
    throw new RangeError(`slot ${slot} of ${JSON.stringify(key)} is already on ${from.port}`);
  }
  const src = state.admins[source] as Redis;
  const dst = state.admins[target] as Redis;
  const srcId = state.ids[source] as string;
  const dstId = state.ids[target] as string;
  const dstNode = state.nodes[target] as ClusterNode;
  // The documented live-resharding sequence (https://redis.io/commands/cluster-setslot/).
  await dst.call('CLUSTER', 'SETSLOT', slot, 'IMPORTING', srcId);
  await src.call('CLUSTER', 'SETSLOT', slot, 'MIGRATING', dstId);
  let keysMoved = 0;
  for (;;) {
    const keys = (await src.call('CLUSTER', 'GETKEYSINSLOT', slot, 100)) as string[];
    if (keys.length === 0) break;
    await src.call('MIGRATE', dstNode.host, dstNode.port, '', 0, 10_000, 'KEYS', ...keys);
    keysMoved += keys.length;
  }
  await dst.call('CLUSTER', 'SETSLOT', slot, 'NODE', dstId);
  await src.call('CLUSTER', 'SETSLOT', slot, 'NODE', dstId);
  for (const [i, admin] of state.admins.entries()) {
    if (i !== source && i !== target) await admin.call('CLUSTER', 'SETSLOT', slot, 'NODE', dstId);
  }
  await waitFor(
    async () => {
      const owners = await Promise.all(state.admins.map((a) => ownerOfSlot(a, slot)));
      return owners.every((owner) => owner.port === dstNode.port);
    },
    {
      timeoutMs: 10_000,
      message: `every node to see slot ${slot} on ${dstNode.port}`,
      retryErrors: true,
    },
  );
  return { slot, from, to: dstNode, keysMoved };
}

/** Every node's view of the bus links to the others (`CLUSTER NODES`), as problems. */
async function clusterBusProblems(
  nodes: readonly ClusterNode[],
  admins: readonly Redis[],
): Promise<string[]> {
  const views = await Promise.all(admins.map((a) => a.call('CLUSTER', 'NODES')));
  const problems: string[] = [];
  for (const [i, view] of views.entries()) {
    const port = (nodes[i] as ClusterNode).port;
    const lines = String(view).trim().split('\n');
    if (lines.length !== nodes.length) problems.push(`${port} knows ${lines.length} nodes`);
    for (const line of lines) {
      // <id> <ip:port@bus> <flags> <master> <ping-sent> <pong-recv> <config-epoch> <link-state> …
      const [, address = '', flags = '', , , pongReceived = '', , link = ''] = line.split(' ');
      if (flags.includes('myself')) continue;
      // (`connected` says a link was set up; a pong says the other end answered on it)
      if (link !== 'connected' || pongReceived === '0' || /handshake|fail|noaddr/.test(flags)) {
        problems.push(
          `${port} sees ${address.split('@')[0] ?? address} ${link}, last pong ${pongReceived} (${flags})`,
        );
      }
    }
  }
  return problems;
}

async function keySlot(admin: Redis, key: string): Promise<number> {
  return Number(await admin.call('CLUSTER', 'KEYSLOT', key));
}

type SlotsReply = [number, number, [string, number, ...unknown[]], ...unknown[]][];

async function ownerOfSlot(admin: Redis, slot: number): Promise<ClusterNode> {
  const ranges = (await admin.call('CLUSTER', 'SLOTS')) as SlotsReply;
  const range = ranges.find(([start, end]) => start <= slot && slot <= end);
  if (!range) throw new Error(`no node of the test cluster serves slot ${slot}`);
  return { host: HOST, port: Number(range[2][1]) };
}

function indexOf(nodes: readonly ClusterNode[], node: ClusterNode): number {
  const index = nodes.findIndex((n) => n.port === node.port);
  if (index < 0) throw new RangeError(`port ${node.port} is not a node of this test cluster`);
  return index;
}

function adminClient(node: ClusterNode): Redis {
  const client = connectRedis(node, { maxRetriesPerRequest: 1, connectTimeout: 2000 });
  client.on('error', () => {
    // surfaced by the failing command instead
  });
  return client;
}
