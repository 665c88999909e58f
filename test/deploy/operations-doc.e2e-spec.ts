import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MEMBER_METRICS } from '../../libs/stream-coordinator/src/metrics/member-metric-definitions.js';
import { PROTOCOL_ERROR_STATUS } from '../../libs/stream-coordinator/src/protocol/error-codes.js';
import { envNamesOf, parseDockerfile, ROOT } from './support/deploy-files.js';

/**
 * docs/operations.md names metrics, variables and files; they must exist, so the guide cannot
 * drift from the code without a test failing.
 */
const doc = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');

/** Every metric name the coordinator registers (its metrics sources). */
function coordinatorMetricNames(): Set<string> {
  const dir = join(ROOT, 'apps/coordinator/src/metrics');
  const names = new Set<string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))) {
    for (const m of readFileSync(join(dir, file), 'utf8').matchAll(/'(rsc_coordinator_[a-z_]+)'/g))
      names.add(m[1] as string);
  }
  return names;
}

describe('docs/operations.md', () => {
  it('names only metrics that exist', () => {
    const coordinator = coordinatorMetricNames();
    const member = new Set(
      Object.values(MEMBER_METRICS).map((m) => `stream_coordinator_${m.name}`),
    );
    const used = [
      ...new Set(
        [...doc.matchAll(/\b((?:rsc_coordinator|stream_coordinator)_[a-z_]+?)(?:_bucket)?\b/g)].map(
          (m) => m[1] as string,
        ),
      ),
    ];
    expect(used.length).toBeGreaterThan(15);
    const unknown = used.filter((name) => !coordinator.has(name) && !member.has(name));
    expect(unknown).toEqual([]);
  });

  it('names only variables, build args and error codes that exist', () => {
    const known = new Set<string>([
      ...envNamesOf('coordinator'),
      ...envNamesOf('example-worker'),
      ...envNamesOf('example-producer'),
      ...Object.keys(PROTOCOL_ERROR_STATUS),
      // Read by docker/redis/*.sh (the Redis container's ACL users).
      ...[
        ...readFileSync(join(ROOT, 'docker/redis/users-acl.sh'), 'utf8').matchAll(
          /\b(REDIS_[A-Z_]+_PASSWORD)\b/g,
        ),
      ].map((m) => m[1] as string),
      'NODE_EXTRA_CA_CERTS', // Node's own: extra trusted CAs (TLS to Redis, HTTPS)
      ...eventTypesIn('apps/coordinator/src/core/group-event.ts'),
      ...eventTypesIn('apps/coordinator/src/core/streams/stream-record.ts'),
    ]);
    for (const file of ['docker/Dockerfile', 'docker/Dockerfile.worker']) {
      const dockerfile = parseDockerfile(join(ROOT, file));
      for (const name of dockerfile.globalArgs.keys()) known.add(name);
      for (const stage of dockerfile.stages) {
        for (const i of stage.instructions)
          if (i.keyword === 'ARG') known.add(i.args.split('=')[0] as string);
      }
    }
    const used = [
      ...new Set(
        [...doc.matchAll(/`([A-Z][A-Z0-9]*_[A-Z0-9_]+)(?:=[^`]*)?`/g)].map((m) => m[1] as string),
      ),
    ];
    expect(used.length).toBeGreaterThan(10);
    expect(used.filter((name) => !known.has(name))).toEqual([]);
  });

  it('names only repository paths that exist', () => {
    const paths = [
      ...new Set(
        [...doc.matchAll(/`((?:docker|apps|libs|test|docs)\/[\w./-]+)`/g)].map(
          (m) => m[1] as string,
        ),
      ),
    ];
    expect(paths.length).toBeGreaterThan(5);
    const missing = paths.filter((p) => {
      try {
        readFileSync(join(ROOT, p));
        return false;
      } catch (error) {
        return !(error instanceof Error && 'code' in error && error.code === 'EISDIR');
      }
    });
    expect(missing).toEqual([]);
  });
});

/** The event-log types a source file declares as string literals of a union (`| 'NAME'`). */
function eventTypesIn(file: string): string[] {
  const source = readFileSync(join(ROOT, file), 'utf8');
  return [...source.matchAll(/\|\s*'([A-Z][A-Z0-9_]+)'/g)].map((m) => m[1] as string);
}
