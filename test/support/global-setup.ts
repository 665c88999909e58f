import type { TestProject } from 'vitest/node';
import { resolveRedis } from './redis-resolve.js';

/**
 * Vitest global setup of the `e2e` project: resolves the Redis every suite uses once (see
 * {@link resolveRedis} for the order), provides its URL to the workers (`redisUrl()`) and exports
 * it as `REDIS_URL` for child processes, and stops whatever it started in teardown. If no Redis
 * can be had, the run fails here with one message saying how to get one.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const redis = await resolveRedis({ log: (line) => console.log(line) });
  process.env.REDIS_URL = redis.url;
  project.provide('redisUrl', redis.url);
  return () => redis.stop();
}
