import type { Redis } from 'ioredis';

/** Redis server counters at one instant (INFO commandstats + INFO cpu). */
export interface RedisSnapshot {
  /** Calls per command name (`xreadgroup`, `evalsha`, …). */
  readonly calls: ReadonlyMap<string, number>;
  /** used_cpu_user + used_cpu_sys of the server, in µs. */
  readonly cpuUs: number;
}

/** What Redis did between two snapshots. */
export interface RedisDelta {
  /** Commands executed (the meter's own INFO calls excluded). */
  readonly commands: number;
  /** Per command, largest first. */
  readonly byCommand: Readonly<Record<string, number>>;
  /** Server CPU time spent, in µs. */
  readonly cpuUs: number;
}

/** Reads Redis' own counters; every Redis figure in the report comes from here. */
export async function redisSnapshot(redis: Redis): Promise<RedisSnapshot> {
  const text = (await redis.call('INFO', 'commandstats', 'cpu')) as string;
  const calls = new Map<string, number>();
  let cpuUs = 0;
  for (const line of text.split('\r\n')) {
    const stat = /^cmdstat_([^:]+):calls=(\d+)/.exec(line);
    if (stat) {
      calls.set(stat[1] as string, Number(stat[2]));
      continue;
    }
    const cpu = /^used_cpu_(user|sys):([\d.]+)$/.exec(line);
    if (cpu) cpuUs += Number(cpu[2]) * 1e6;
  }
  return { calls, cpuUs };
}

/** The difference `after − before`. */
export function redisDelta(before: RedisSnapshot, after: RedisSnapshot): RedisDelta {
  const byCommand: Record<string, number> = {};
  let commands = 0;
  for (const [name, n] of after.calls) {
    if (name === 'info') continue;
    const d = n - (before.calls.get(name) ?? 0);
    if (d > 0) {
      byCommand[name] = d;
      commands += d;
    }
  }
  const sorted = Object.fromEntries(Object.entries(byCommand).sort((a, b) => b[1] - a[1]));
  return { commands, byCommand: sorted, cpuUs: after.cpuUs - before.cpuUs };
}

/** Measures what Redis did while `work` ran. */
export async function meterRedis<T>(
  redis: Redis,
  work: () => Promise<T>,
): Promise<{ result: T; redis: RedisDelta }> {
  const before = await redisSnapshot(redis);
  const result = await work();
  const after = await redisSnapshot(redis);
  return { result, redis: redisDelta(before, after) };
}
