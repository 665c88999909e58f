import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import {
  KeySpace,
  RoutingTable,
  routingFunctionFor,
} from '@redis-stream-coordinator/nestjs/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = process.cwd();
const LIBRARY = resolve(ROOT, 'libs/stream-coordinator');
const SCRATCH_MAIN = resolve(ROOT, 'test/workspace/fixtures/scratch-app/main.mjs');
/**
 * Required peers, installed at the versions of the root lockfile; ioredis at the major of this
 * run (`RSC_IOREDIS=5`: the `ioredis5` devDependency's version, which the peer range must allow).
 */
const PEERS = ['@nestjs/common', '@nestjs/core', 'ioredis', 'reflect-metadata', 'rxjs'];
const LOCKED_AS: Record<string, string> =
  process.env.RSC_IOREDIS === '5' ? { ioredis: 'ioredis5' } : {};

/** The environment for child `npm`s: none of the `npm_*` variables of an enclosing `npm test`. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env)) {
    if (!name.toLowerCase().startsWith('npm_')) env[name] = value;
  }
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false' };
}

async function lockedVersion(name: string): Promise<string> {
  const lock = JSON.parse(await readFile(resolve(ROOT, 'package-lock.json'), 'utf8')) as {
    packages: Record<string, { version?: string }>;
  };
  const version = lock.packages[`node_modules/${name}`]?.version;
  if (!version) throw new Error(`package-lock.json has no node_modules/${name}`);
  return version;
}

interface PackResult {
  filename: string;
  files: { path: string }[];
}

describe('the packed library installs into a separate Nest app', () => {
  let packDir: string;
  let appDir: string;
  let pack: PackResult;

  beforeAll(async () => {
    for (const built of ['dist/index.js', 'dist/protocol/index.js', 'dist/index.d.ts']) {
      if (!existsSync(join(LIBRARY, built))) {
        throw new Error(
          `libs/stream-coordinator/${built} is missing: run \`npm run build\` first ` +
            '(`npm test` builds before running the tests)',
        );
      }
    }
    packDir = await mkdtemp(join(tmpdir(), 'rsc-pack-'));
    appDir = await mkdtemp(join(tmpdir(), 'rsc-scratch-app-'));
    const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', packDir], {
      cwd: LIBRARY,
      env: npmEnv(),
      timeout: 60_000,
    });
    [pack] = JSON.parse(stdout) as [PackResult];
  });

  afterAll(async () => {
    await Promise.all(
      [packDir, appDir].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })),
    );
  });

  it('npm pack ships the built files, types, README, LICENSE, CHANGELOG, the SQL migration and package.json only', () => {
    const paths = pack.files.map((f) => f.path);
    expect(pack.filename).toBe('redis-stream-coordinator-nestjs-0.1.0.tgz');
    expect(paths).toEqual(
      expect.arrayContaining([
        'package.json',
        'README.md',
        'LICENSE',
        'CHANGELOG.md',
        'dist/index.js',
        'dist/index.d.ts',
        'dist/protocol/index.js',
        'dist/protocol/index.d.ts',
      ]),
    );
    expect(paths.filter((p) => !p.startsWith('dist/')).sort()).toEqual([
      'CHANGELOG.md',
      'LICENSE',
      'README.md',
      'package.json',
      'sql/exactly-once-offsets.sql',
    ]);
    expect(paths.some((p) => p.endsWith('.tsbuildinfo') || p.includes('.spec.'))).toBe(false);
  });

  it('installs with its peers into a scratch app that boots a Nest context and uses it', async () => {
    await writeFile(
      join(appDir, 'package.json'),
      JSON.stringify({ name: 'scratch-app', version: '0.0.0', private: true, type: 'module' }),
    );
    const peers = await Promise.all(
      PEERS.map(async (p) => `${p}@${await lockedVersion(LOCKED_AS[p] ?? p)}`),
    );
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--no-package-lock',
        join(packDir, pack.filename),
        ...peers,
      ],
      { cwd: appDir, env: npmEnv(), timeout: 150_000 },
    );
    await copyFile(SCRATCH_MAIN, join(appDir, 'main.mjs'));

    const { stdout } = await run(process.execPath, ['main.mjs'], {
      cwd: appDir,
      env: npmEnv(),
      timeout: 30_000,
    });
    const line = stdout.split('\n').find((l) => l.startsWith('SCRATCH_APP_OK '));
    expect(line, `scratch app output:\n${stdout}`).toBeDefined();
    const shard = new RoutingTable(routingFunctionFor([0, 1, 2, 3, 4, 5, 6, 7])).shardFor(
      'order-42',
    );
    expect(JSON.parse((line as string).slice('SCRATCH_APP_OK '.length))).toEqual({
      shard,
      shardKey: new KeySpace('scratch').shardKey('orders', shard),
      rootIsApplicationApi: true,
    });
    // it ran against the installed tarball, not the workspace sources
    const installed = JSON.parse(
      await readFile(
        join(appDir, 'node_modules/@redis-stream-coordinator/nestjs/package.json'),
        'utf8',
      ),
    ) as { name: string; dependencies?: Record<string, string> };
    expect(installed.name).toBe('@redis-stream-coordinator/nestjs');
    expect(existsSync(join(appDir, 'node_modules/zod/package.json'))).toBe(true);
    // the shard readers' own ioredis 5, installed under its alias whatever the app's ioredis
    expect(installed.dependencies?.ioredis5).toBe('npm:ioredis@^5.11.1');
    const readers = JSON.parse(
      await readFile(join(appDir, 'node_modules/ioredis5/package.json'), 'utf8'),
    ) as { name: string; version: string };
    expect(readers.name).toBe('ioredis');
    expect(readers.version).toMatch(/^5\./);
  }, 180_000);
});
