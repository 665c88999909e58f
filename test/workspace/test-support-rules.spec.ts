import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Test plumbing lives in one module per concern (docs/testing.md, "Test support"): this keeps the
 * two rules that drift back most easily. Every ioredis client of tests, benchmarks and scripts is
 * made by `test/support/redis-client.ts` (or `createTestRedis`, which uses it), and nothing
 * imports the polling helpers that `test/support/wait.ts` replaced.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const DIRS = ['test', 'bench', 'scripts'];
const CLIENT_FACTORY = 'test/support/redis-client.ts';
const DIRECT_CLIENT = /\bnew (?:Redis|Cluster)\(/;
const RETIRED_HELPERS = /from '[./]*(?:coordinator\/)?support\/wait-until\.js'/;

function tsFiles(): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'dist') walk(path);
      } else if (entry.name.endsWith('.ts')) out.push(path);
    }
  };
  for (const dir of DIRS) walk(join(ROOT, dir));
  return out;
}

describe('test support rules', () => {
  it('makes every Redis client through test/support/redis-client.ts and waits through wait.ts', () => {
    const problems: string[] = [];
    for (const file of tsFiles()) {
      const name = relative(ROOT, file);
      readFileSync(file, 'utf8')
        .split('\n')
        .forEach((line, index) => {
          if (name !== CLIENT_FACTORY && DIRECT_CLIENT.test(line)) {
            problems.push(
              `${name}:${index + 1}: use connectRedis/connectRedisCluster/createTestRedis`,
            );
          }
          if (RETIRED_HELPERS.test(line)) {
            problems.push(`${name}:${index + 1}: wait-until.js is gone: use test/support/wait.ts`);
          }
        });
    }
    expect(problems).toEqual([]);
  });
});
