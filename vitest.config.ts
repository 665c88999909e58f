import { defineConfig } from 'vitest/config';

/**
 * One Vitest run covers every suite; `npm test` (the README's test command) runs it after lint,
 * typecheck and build, because the end-to-end suites start the built apps as child processes.
 *
 * - `unit`: pure logic next to the code (`*.spec.ts` under `apps/`, `libs/` and `bench/`), and checks of the
 *   repository's own files (`test/workspace/*.spec.ts`: docs/protocol.md citations resolve).
 * - `e2e`: real Redis, real HTTP, real child processes (`test/**\/*.e2e-spec.ts`). Its global
 *   setup resolves the test Redis once; unit tests need none.
 */
export default defineConfig({
  resolve: { tsconfigPaths: true },
  test: {
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: [
            'apps/*/src/**/*.spec.ts',
            'libs/*/src/**/*.spec.ts',
            'test/workspace/*.spec.ts',
            'libs/*/cli/**/*.spec.ts',
            'bench/**/*.spec.ts',
          ],
          testTimeout: 30_000,
          // Projects with different worker limits must run as separate groups: unit first.
          sequence: { groupOrder: 0 },
        },
      },
      {
        extends: true,
        test: {
          name: 'e2e',
          include: ['test/**/*.e2e-spec.ts'],
          // Resolves Redis once for every e2e suite (REDIS_URL, :6379, Docker, redis-server).
          globalSetup: ['./test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          fileParallelism: true,
          maxWorkers: 2,
          sequence: { groupOrder: 1 },
        },
      },
    ],
  },
});
