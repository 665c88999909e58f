import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { createRedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { describe, expect, it } from 'vitest';
import { runNode } from '../support/child-run.js';
import { ciNodeVersions } from '../support/ci-node-versions.js';
import { repoRoot } from '../support/service-process.js';

/**
 * The Node.js releases and ioredis majors the project claims are the ones CI runs the suite on
 * (`.ci/node-versions`, read by `.ci/run` and `scripts/with-node.sh`), and a run really uses the
 * Node and ioredis it says (`RSC_NODE`, `RSC_IOREDIS`, exported by `scripts/with-node.sh`):
 * with `RSC_IOREDIS=5` the library builds its connections with ioredis 5, in the test process
 * and in the child processes the tests start.
 */

const ROOT = repoRoot();

interface PackageJson {
  readonly engines?: { node?: string };
  readonly peerDependencies?: Record<string, string>;
  readonly dependencies?: Record<string, string>;
  readonly devDependencies?: Record<string, string>;
}

const readPackage = (path: string): PackageJson =>
  JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as PackageJson;

/** `^20.19.0 || ^22.12.0` → [[20, '20.19.0'], [22, '22.12.0']]; anything else is rejected. */
function caretRanges(range: string): Array<[number, string]> {
  return range.split('||').map((part) => {
    const match = /^\^((\d+)\.\d+\.\d+)$/.exec(part.trim());
    if (!match) throw new Error(`"${part.trim()}" of "${range}" is not a ^x.y.z range`);
    return [Number(match[2]), match[1] as string];
  });
}

/** The ioredis major of a connection the library built: by its class, never by its name. */
async function ioredisMajorOf(connection: object): Promise<number | 'unknown'> {
  const entry = (name: string): string =>
    pathToFileURL(join(ROOT, 'node_modules', name, 'built/index.js')).href;
  const v5 = (await import(entry('ioredis5'))) as { Redis: new () => object };
  if (connection instanceof v5.Redis) return 5;
  const v6 = (await import(entry('ioredis'))) as { Redis: new () => object };
  return connection instanceof v6.Redis ? 6 : 'unknown';
}

const expectedIoredis = Number(process.env.RSC_IOREDIS ?? '6');

describe('Node.js and ioredis versions', () => {
  it('engines name exactly the Node majors CI runs, the same in both package.json files', () => {
    const root = readPackage('package.json').engines?.node ?? '';
    const library = readPackage('libs/stream-coordinator/package.json').engines?.node ?? '';
    expect(library).toBe(root);
    const majors = caretRanges(root).map(([major]) => major);
    expect(majors).toEqual(ciNodeVersions().map((line) => line.nodeMajor));
    for (const line of ciNodeVersions().filter((l) => l.version !== 'system')) {
      const floor = caretRanges(root).find(([major]) => major === line.nodeMajor)?.[1] ?? '';
      const [a, b, c] = line.version.split('.').map(Number) as [number, number, number];
      const [x, y, z] = floor.split('.').map(Number) as [number, number, number];
      expect(a * 1e6 + b * 1e3 + c, `${line.version} is within ^${floor}`).toBeGreaterThanOrEqual(
        x * 1e6 + y * 1e3 + z,
      );
    }
  });

  it('the ioredis peer range starts at the versions the suite runs against, and CI runs each', () => {
    const peer = readPackage('libs/stream-coordinator/package.json').peerDependencies?.ioredis;
    const root = readPackage('package.json');
    const tested = new Map<number, string>([
      [5, (root.devDependencies?.ioredis5 ?? '').replace(/^npm:ioredis@/, '')],
      [6, root.dependencies?.ioredis ?? ''],
    ]);
    expect(caretRanges(peer ?? '')).toEqual([...tested.entries()]);
    expect(new Set(ciNodeVersions().map((line) => line.ioredisMajor))).toEqual(
      new Set(tested.keys()),
    );
  });

  it('this run uses the Node major it was started for (RSC_NODE)', () => {
    const major = Number(process.versions.node.split('.')[0]);
    if (process.env.RSC_NODE !== undefined) expect(major).toBe(Number(process.env.RSC_NODE));
    expect(ciNodeVersions().map((line) => line.nodeMajor)).toContain(major);
  });

  it('the library connects with the ioredis major of this run (RSC_IOREDIS, default 6)', async () => {
    const connection = createRedisConnection('redis://127.0.0.1:1', 'command', {
      lazyConnect: true,
    });
    try {
      expect(await ioredisMajorOf(connection)).toBe(expectedIoredis);
    } finally {
      connection.disconnect();
    }
  });

  it('so does the built library in a child process (what the apps run on)', async () => {
    const script = `
      import { pathToFileURL } from 'node:url';
      import { join } from 'node:path';
      import { createRedisConnection } from '@redis-stream-coordinator/nestjs/internal';
      const c = createRedisConnection('redis://127.0.0.1:1', 'command', { lazyConnect: true });
      const load = (n) => import(pathToFileURL(join(process.cwd(), 'node_modules', n, 'built/index.js')).href);
      const major = c instanceof (await load('ioredis5')).Redis ? 5
        : c instanceof (await load('ioredis')).Redis ? 6 : 'unknown';
      c.disconnect();
      console.log('IOREDIS_MAJOR ' + major + ' NODE ' + process.versions.node);`;
    const run = await runNode(['--input-type=module', '-e', script], {
      cwd: ROOT,
      timeoutMs: 30_000,
    });
    const line = run.stdout.split('\n').find((l) => l.startsWith('IOREDIS_MAJOR '));
    expect(line, run.output).toBe(`IOREDIS_MAJOR ${expectedIoredis} NODE ${process.versions.node}`);
  });
});
