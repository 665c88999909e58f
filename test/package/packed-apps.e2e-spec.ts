import { realpathSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { childVitestEnv, runNode } from '../support/child-run.js';
import { CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { freePort } from '../support/free-port.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';
import { createTempDir, type TempDir } from '../support/temp-dir.js';
import { pollUntil } from '../support/wait.js';
import {
  installFixture,
  type PackedLibrary,
  packLibrary,
  startApp,
  TSC,
  type AppProcess,
} from './packed-fixtures.js';

/*
 * Every kind of Nest app a user has, built and run against the packed library (issue #17): an
 * ESM app (the hybrid example), a CommonJS app (the microservice example: `require` of the
 * ESM-only package, Node >= 20.19), a Jest test and a Vitest test of `Test.createTestingModule`.
 * One `npm pack`, one coordinator; each app uses its own group and checks its own messages.
 */

/** Each app case builds, starts and stops a Nest app: bounded well above its ~20-40 s. */
const APP_TIMEOUT_MS = 180_000;

interface HandledOrder {
  readonly orderId: string;
  readonly customerId: string;
  readonly shard: number;
}

describe('apps using the packed library', () => {
  const redis = useRedisPrefix('packed-apps');
  let temp: TempDir;
  let library: PackedLibrary;
  let coordinator: CoordinatorProcess;

  const env = (group: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv =>
    childVitestEnv({
      COORDINATOR_URL: coordinator.url,
      COORDINATOR_TOKEN: TEST_TOKENS.member,
      REDIS_URL: redisUrl(),
      GROUP: group,
      RUN_ID: `${redis.prefix}-${group}`,
      ...extra,
    });

  /** Builds the app with its own tsconfig (types from the tarball's `.d.ts`); fails on errors. */
  const build = async (dir: string): Promise<void> => {
    const tsc = await runNode([TSC, '-p', 'tsconfig.json'], { cwd: dir, timeoutMs: 90_000 });
    expect(tsc.code, tsc.output).toBe(0);
  };

  /** Where the app's `import`/`require` of the package lands (module format as the app has it). */
  const resolved = async (dir: string, how: 'import' | 'require'): Promise<string> => {
    const script =
      how === 'require'
        ? "console.log(require.resolve('@redis-stream-coordinator/nestjs/microservices'))"
        : "console.log(import.meta.resolve('@redis-stream-coordinator/nestjs/microservices'))";
    const probe = await runNode(
      how === 'require' ? ['-e', script] : ['--input-type=module', '-e', script],
      { cwd: dir, timeoutMs: 15_000 },
    );
    expect(probe.code, probe.output).toBe(0);
    return realpathSync(probe.stdout.trim().replace(/^file:\/\//, ''));
  };

  beforeAll(async () => {
    temp = createTempDir('packed-apps');
    library = await packLibrary(temp.path);
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:4' },
      readyTimeoutMs: 60_000,
    });
  });
  afterAll(async () => {
    await coordinator?.stop();
    temp?.remove();
  });

  it('the tarball holds the built entry points and no sources', () => {
    expect(library.files).toEqual(
      expect.arrayContaining([
        'package.json',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/microservices/index.js',
        'dist/microservices/index.d.ts',
      ]),
    );
    expect(library.files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([]);
  });

  it(
    'an ESM app ("type": "module") runs the hybrid example: HTTP plus connectMicroservice',
    async () => {
      const dir = await installFixture(library, temp.path, 'esm-app', 'apps/example-hybrid');
      expect(await resolved(dir, 'import')).toBe(
        join(
          realpathSync(dir),
          'node_modules/@redis-stream-coordinator/nestjs/dist/microservices/index.js',
        ),
      );
      await build(dir);
      const port = await freePort();
      const app: AppProcess = await startApp(
        dir,
        'dist/main.js',
        env('packed-esm-hybrid', { PORT: String(port) }),
        /group packed-esm-hybrid joining, serving on/,
      );
      try {
        const orders = ['o1', 'o2', 'o3', 'o4'].map((o, i) => ({
          orderId: `${redis.prefix}-${o}`,
          customerId: `c${i % 2}`,
        }));
        for (const order of orders) {
          const res = await fetch(`http://127.0.0.1:${port}/orders`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify(order),
            signal: AbortSignal.timeout(10_000),
          });
          expect(res.status, await res.clone().text()).toBe(201);
          expect((await res.json()) as { id: string }).toEqual({ id: expect.any(String) });
        }
        const handled = await pollUntil(
          async () =>
            (await (
              await fetch(`http://127.0.0.1:${port}/orders/handled`, {
                signal: AbortSignal.timeout(5_000),
              })
            ).json()) as HandledOrder[],
          (list) => orders.every((o) => list.some((h) => h.orderId === o.orderId)),
          { timeoutMs: 20_000, message: 'the hybrid app to handle its orders' },
        );
        // a customer's orders arrive in the order they were placed
        for (const customer of ['c0', 'c1']) {
          expect(handled.filter((h) => h.customerId === customer).map((h) => h.orderId)).toEqual(
            orders.filter((o) => o.customerId === customer).map((o) => o.orderId),
          );
        }
      } finally {
        expect(['exit 0', 'signal SIGTERM'], app.output()).toContain(await app.stop());
      }
    },
    APP_TIMEOUT_MS,
  );

  it(
    'a CommonJS app requires the ESM package and runs the microservice example',
    async () => {
      const dir = await installFixture(library, temp.path, 'cjs-app', 'apps/example-microservice');
      expect(await resolved(dir, 'require')).toBe(
        join(
          realpathSync(dir),
          'node_modules/@redis-stream-coordinator/nestjs/dist/microservices/index.js',
        ),
      );
      await build(dir);
      const app = await startApp(
        dir,
        'dist/main.js',
        env('packed-cjs-microservice'),
        /group packed-cjs-microservice joined, handling orders/,
      );
      try {
        // the built main.js really is CommonJS
        const main = await runNode(
          [
            '-e',
            "console.log(typeof require('./dist/microservice-config.js').loadMicroserviceConfig)",
          ],
          { cwd: dir, timeoutMs: 15_000 },
        );
        expect(main.stdout.trim(), main.output).toBe('function');
        const ids = ['m1', 'm2', 'm3'].map((m) => `${redis.prefix}-${m}`);
        await publishOrders(ids);
        await pollUntil(
          () => app.output(),
          (output) => ids.every((id) => output.includes(`order ${id} of `)),
          { timeoutMs: 20_000, message: 'the microservice to log its orders' },
        );
      } finally {
        expect(['exit 0', 'signal SIGTERM'], app.output()).toContain(await app.stop());
      }
    },
    APP_TIMEOUT_MS,
  );

  /** Publishes orders from a CommonJS script, with the library the CJS fixture installed. */
  const publishOrders = async (ids: readonly string[]): Promise<void> => {
    const script = [
      "const { StreamCoordinatorClientProxy } = require('@redis-stream-coordinator/nestjs/microservices');",
      "const { lastValueFrom } = require('rxjs');",
      'const client = new StreamCoordinatorClientProxy({ coordinatorUrl: process.env.COORDINATOR_URL,',
      '  token: process.env.COORDINATOR_TOKEN, redis: process.env.REDIS_URL, group: process.env.GROUP });',
      'const ids = JSON.parse(process.env.IDS);',
      '(async () => {',
      '  for (const id of ids)',
      "    await lastValueFrom(client.emit('orders', { key: id, value: { orderId: id, customerId: id } }));",
      '  await client.close();',
      '})().catch((error) => { console.error(error); process.exit(1); });',
    ].join('\n');
    const publisher = await runNode(['-e', script], {
      cwd: join(temp.path, 'cjs-app'),
      env: env('packed-publisher', { IDS: JSON.stringify(ids) }),
      timeoutMs: 30_000,
    });
    expect(publisher.code, publisher.output).toBe(0);
  };

  it(
    'a Jest test (ts-jest, ESM mode) boots the module with Test.createTestingModule',
    async () => {
      const dir = await installFixture(library, temp.path, 'jest-app');
      const jest = await runNode(
        [
          '--experimental-vm-modules',
          'node_modules/jest/bin/jest.js',
          '--ci',
          '--cacheDirectory',
          join(dir, '.jest-cache'),
        ],
        { cwd: dir, env: env('packed-jest'), timeoutMs: 100_000 },
      );
      expect(jest.code, jest.output).toBe(0);
      expect(jest.output).toMatch(/Tests:\s+1 passed, 1 total/);
    },
    APP_TIMEOUT_MS,
  );

  it(
    'a Vitest test boots the module with Test.createTestingModule',
    async () => {
      const dir = await installFixture(library, temp.path, 'vitest-app');
      const vitest = await runNode(['node_modules/vitest/vitest.mjs', 'run'], {
        cwd: dir,
        env: env('packed-vitest'),
        timeoutMs: 100_000,
      });
      expect(vitest.code, vitest.output).toBe(0);
      expect(vitest.output).toMatch(/Tests\s+.*1 passed/);
    },
    APP_TIMEOUT_MS,
  );
});
