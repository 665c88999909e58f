import { readFileSync } from 'node:fs';
import { cpus, loadavg, release, totalmem } from 'node:os';
import { join } from 'node:path';
import type { Redis } from 'ioredis';
import { repoRoot } from '../../test/support/service-process.js';

/** Where and with what a run was made. */
export interface MachineInfo {
  readonly cpu: string;
  readonly cores: number;
  readonly memoryGiB: number;
  readonly kernel: string;
  /** 1-minute load average when the run started (the machine may be shared). */
  readonly loadAverageAtStart: number;
  readonly versions: Readonly<Record<string, string>>;
}

const PACKAGES = [
  'ioredis',
  '@nestjs/core',
  '@nestjs/platform-fastify',
  'moleculer',
  '@moleculer/channels',
  'bullmq',
  'prom-client',
];

function packageVersion(name: string, from = repoRoot()): string {
  try {
    return (
      JSON.parse(readFileSync(join(from, 'node_modules', name, 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
  } catch {
    return 'n/a';
  }
}

/** Collects the machine, Node, Redis and package versions. */
export async function machineInfo(redis: Redis): Promise<MachineInfo> {
  const server = (await redis.info('server')) as string;
  const redisVersion = /redis_version:(\S+)/.exec(server)?.[1] ?? 'n/a';
  const versions: Record<string, string> = {
    node: process.version,
    redis: redisVersion,
    '@redis-stream-coordinator/nestjs': packageVersion('@redis-stream-coordinator/nestjs'),
  };
  for (const p of PACKAGES) versions[p] = packageVersion(p);
  versions['ioredis (used by bullmq)'] = packageVersion(
    'ioredis',
    join(repoRoot(), 'node_modules', 'bullmq'),
  );
  const list = cpus();
  return {
    cpu: list[0]?.model ?? 'unknown',
    cores: list.length,
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    loadAverageAtStart: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    versions,
  };
}
