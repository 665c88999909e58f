import type { TestProject } from 'vitest/node';

/**
 * Resolves the Redis every suite uses (minimal version: REDIS_URL or the local default) and
 * provides it to the workers.
 */
export default function setup(project: TestProject): void {
  const url = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
  process.env.REDIS_URL = url;
  project.provide('redisUrl', url);
}
