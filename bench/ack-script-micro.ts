import type { Redis } from 'ioredis';
import { ShardCommands } from '@redis-stream-coordinator/nestjs/internal';
import { benchRedis } from './support/bench-redis.js';
import { connectRedis } from '../test/support/redis-client.js';
import { benchPayload } from './workers/payload.js';

/**
 * What the fenced ack costs Redis (`bench/benchmarks-notes.md`, "The fenced ack in Redis"):
 * `SHARDS` reader loops on their own connections, each reading batches of `BATCH` from its shard
 * and sending the ack of the previous batch in the same write, as the member's reader does, with
 * four kinds of ack, in rounds that rotate their order:
 * - `xack`: a plain `XACK` (not fenced: the floor, what the raw loops send);
 * - `msgpack`: the reader's own `ackBeforeRead` (fence check, the ids as one MessagePack array,
 *   `XACK`, the orphan check);
 * - `joined`: the same script as it was before, the ids joined with `,` and split by
 *   `string.gmatch`;
 * - `per-id`: the same script with one argument per id (`unpack(ARGV, 3)`).
 * Prints Redis's own time per acknowledged entry from `INFO commandstats` (the script, the `XACK`
 * inside or outside it, the read) and the server's CPU per entry. Spawns its own `redis-server`
 * (or `BENCH_REDIS_URL`).
 * `node .tools/bench/ack-script-micro.js [ENTRIES_PER_SHARD=12500] [ROUNDS=6] [BATCH=100]`.
 */
const PER_SHARD = Number(process.argv[2] ?? 12_500);
const ROUNDS = Number(process.argv[3] ?? 6);
const BATCH = Number(process.argv[4] ?? 100);
const SHARDS = 8;
const GROUP = 'g';
const MEMBER = 'm1';

/** The fence check and orphan check around the ack list, as the `ackBeforeRead` script has them. */
const FENCE = `
local owner = redis.call('HGET', KEYS[1] .. ':meta', 'owner:' .. ARGV[1])
local sep = owner and string.find(owner, ':', 1, true)
if not sep or string.sub(owner, sep + 1) ~= ARGV[2] then return redis.error_reply('FENCED') end
`;
const ORPHANS = `
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then return -1 end
return acked
`;
const JOINED = `${FENCE}
local acked = 0
local ids = {}
for id in string.gmatch(ARGV[3], '[^,]+') do
  ids[#ids + 1] = id
  if #ids == 1000 then
    acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ids))
    ids = {}
  end
end
if #ids > 0 then acked = acked + redis.call('XACK', KEYS[1], ARGV[1], unpack(ids)) end
${ORPHANS}`;
const PER_ID = `${FENCE}
local acked = 0
if #ARGV > 2 then acked = redis.call('XACK', KEYS[1], ARGV[1], unpack(ARGV, 3)) end
${ORPHANS}`;

type Variant = 'xack' | 'msgpack' | 'joined' | 'per-id';
const VARIANTS: readonly Variant[] = ['xack', 'msgpack', 'joined', 'per-id'];

async function fill(admin: Redis, key: string): Promise<void> {
  await admin.del(key, `${key}:meta`);
  for (let i = 0; i < PER_SHARD; i += 1000) {
    const pipeline = admin.pipeline();
    for (let j = i; j < Math.min(PER_SHARD, i + 1000); j++) {
      pipeline.xadd(key, '*', 'key', `k-${j}`, 'payload', JSON.stringify(benchPayload(j)));
    }
    await pipeline.exec();
  }
  await admin.hset(`${key}:meta`, `owner:${GROUP}`, `1:${MEMBER}`);
  await admin.xgroup('CREATE', key, GROUP, '0');
}

/** One shard's reader loop: ack of the last batch and the next read in one write. */
async function drain(
  c: Redis,
  key: string,
  variant: Variant,
  sha: Record<string, string>,
): Promise<void> {
  const commands = new ShardCommands(key, GROUP, MEMBER);
  const ack = (ids: string[]): Promise<unknown> => {
    switch (variant) {
      case 'xack':
        return ids.length === 0 ? Promise.resolve(0) : c.xack(key, GROUP, ...ids);
      case 'msgpack':
        return commands.ackBeforeRead(c, ids);
      case 'joined':
        return c.evalsha(sha.joined as string, 1, key, GROUP, MEMBER, ids.join(','));
      case 'per-id':
        return c.evalsha(sha.perId as string, 1, key, GROUP, MEMBER, ...ids);
    }
  };
  let ids: string[] = [];
  for (let n = 0; n < PER_SHARD;) {
    const acked = ack(ids);
    const read = c.xreadgroupBuffer('GROUP', GROUP, MEMBER, 'COUNT', BATCH, 'STREAMS', key, '>');
    await acked;
    const reply = (await read) as unknown as Array<[Buffer, Array<[Buffer, Buffer[]]>]> | null;
    const entries = reply?.[0]?.[1] ?? [];
    n += entries.length;
    ids = entries.map((entry) => entry[0].toString());
  }
  await ack(ids);
}

function commandUsec(stats: string, command: string): number {
  const match = new RegExp(`cmdstat_${command}:calls=\\d+,usec=(\\d+)`).exec(stats);
  return match ? Number(match[1]) : 0;
}

async function serverCpuUs(admin: Redis): Promise<number> {
  const info = await admin.info('cpu');
  let seconds = 0;
  for (const m of info.matchAll(/used_cpu_(?:user|sys):([\d.]+)/g)) seconds += Number(m[1]);
  return seconds * 1e6;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1] ?? NaN;

async function main(): Promise<void> {
  const redis = await benchRedis((line) => console.error(line));
  const admin = connectRedis(redis.url);
  const conns = Array.from({ length: SHARDS }, () => connectRedis(redis.url, { protocol: 2 }));
  try {
    const sha = {
      joined: (await admin.script('LOAD', JOINED)) as string,
      perId: (await admin.script('LOAD', PER_ID)) as string,
    };
    const results = new Map<Variant, { script: number[]; xack: number[]; cpu: number[] }>(
      VARIANTS.map((v) => [v, { script: [], xack: [], cpu: [] }]),
    );
    const total = SHARDS * PER_SHARD;
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < VARIANTS.length; i++) {
        const variant = VARIANTS[(i + round) % VARIANTS.length] as Variant;
        const keys = Array.from({ length: SHARDS }, (_, s) => `{ack-micro-${s}}:${variant}`);
        for (const key of keys) await fill(admin, key);
        await admin.config('RESETSTAT');
        const before = await serverCpuUs(admin);
        await Promise.all(keys.map((key, s) => drain(conns[s] as Redis, key, variant, sha)));
        const cpu = (await serverCpuUs(admin)) - before;
        const stats = await admin.info('commandstats');
        const r = results.get(variant);
        r?.script.push(commandUsec(stats, 'evalsha') / total);
        r?.xack.push(commandUsec(stats, 'xack') / total);
        r?.cpu.push(cpu / total);
        for (const key of keys) await admin.del(key, `${key}:meta`);
      }
    }
    console.log(
      `${SHARDS} shards × ${PER_SHARD} entries, batch ${BATCH}, ${ROUNDS} rounds; medians, µs per acknowledged entry`,
    );
    console.log('| ack | the ack (script, or plain XACK) | of it: XACK | Redis CPU |');
    console.log('|---|---|---|---|');
    for (const [variant, r] of results) {
      const ackUs = variant === 'xack' ? median(r.xack) : median(r.script);
      console.log(
        `| ${variant} | ${ackUs.toFixed(2)} | ${median(r.xack).toFixed(2)} | ${median(r.cpu).toFixed(2)} |`,
      );
    }
  } finally {
    for (const c of conns) c.disconnect();
    admin.disconnect();
    await redis.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
