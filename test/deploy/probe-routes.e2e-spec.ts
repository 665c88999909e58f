import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorProcess } from '../support/coordinator-process.js';
import { redisUrl, useRedisPrefix } from '../support/redis.js';
import type { ServiceProcess } from '../support/service-process.js';
import { WorkerProcess } from '../support/worker-process.js';
import { ProducerProcess } from '../cluster/support/producer-process.js';
import {
  type AppName,
  appOfImage,
  expand,
  fetchProbe,
  K8S_DIR,
  loadCompose,
  loadKustomization,
  parseDockerfile,
  type Probe,
  ROOT,
  stageVariables,
} from './support/deploy-files.js';

/** Every HTTP probe of the Kubernetes manifests, the compose file and the Dockerfiles. */
function allProbes(): Probe[] {
  const probes: Probe[] = [];
  const add = (app: AppName | undefined, path: string | undefined, source: string): void => {
    if (!app || !path) throw new Error(`${source}: cannot tell the app or the path of a probe`);
    probes.push({ app, path, kind: path.endsWith('/live') ? 'live' : 'ready', source });
  };
  for (const variant of ['workers-dynamic', 'workers-static']) {
    for (const o of loadKustomization(join(K8S_DIR, variant)).objects) {
      if (o.kind !== 'Deployment' && o.kind !== 'StatefulSet') continue;
      const pod = (o.spec as { template: { spec: { containers: Array<Record<string, unknown>> } } })
        .template.spec;
      for (const c of pod.containers) {
        const app = appOfImage(String(c.image));
        if (!app) continue; // Redis
        for (const probe of ['readinessProbe', 'livenessProbe', 'startupProbe']) {
          const path = (c[probe] as { httpGet?: { path: string } } | undefined)?.httpGet?.path;
          if (c[probe] !== undefined) add(app, path, `${o.file} ${o.metadata.name} ${probe}`);
        }
      }
    }
  }
  const compose = loadCompose() as {
    services: Record<string, { image?: string; healthcheck?: { test: string[] } }>;
  };
  for (const [name, service] of Object.entries(compose.services)) {
    const app = service.image ? appOfImage(service.image) : undefined;
    if (!app) continue;
    add(app, fetchProbe((service.healthcheck?.test ?? []).join(' '))?.path, `compose.yml ${name}`);
  }
  const images: Array<[string, AppName, Record<string, string>]> = [
    ['docker/Dockerfile', 'coordinator', {}],
    ['docker/Dockerfile.worker', 'example-worker', {}],
    [
      'docker/Dockerfile.worker',
      'example-producer',
      { APP: 'example-producer', HEALTH_PATH: '/health/live' },
    ],
  ];
  for (const [file, app, args] of images) {
    const dockerfile = parseDockerfile(join(ROOT, file));
    const runtime = dockerfile.stages[dockerfile.stages.length - 1];
    if (!runtime) throw new Error(`${file}: no stage`);
    const vars = stageVariables(dockerfile, runtime, args);
    const health =
      runtime.instructions.filter((i) => i.keyword === 'HEALTHCHECK').at(-1)?.args ?? '';
    const path = health.includes('process.env.HEALTH_PATH')
      ? vars.get('HEALTH_PATH')
      : fetchProbe(expand(health, vars))?.path;
    add(app, path, `${file} HEALTHCHECK (${app})`);
  }
  return probes;
}

/**
 * The probes of every deployment file hit routes the apps really serve: the built coordinator,
 * example worker and example producer run as processes on the test Redis, and every probe path
 * must answer 200 once the system is up (a readiness route may answer 503 while it starts, a
 * missing route would stay 404).
 */
describe('health probes of the deployment files hit real routes', () => {
  const { prefix } = useRedisPrefix('probe-routes');
  const probes = allProbes();
  const running = new Map<AppName, ServiceProcess>();

  beforeAll(async () => {
    const coordinator = await CoordinatorProcess.start({ prefix, env: { STREAMS: 'orders:2' } });
    running.set('coordinator', coordinator);
    const [worker, producer] = await Promise.all([
      WorkerProcess.start({
        coordinatorUrl: coordinator.url,
        group: 'probe-routes',
        redisUrl: redisUrl(),
      }),
      ProducerProcess.start({
        coordinatorUrl: coordinator.url,
        redisUrl: redisUrl(),
        env: { RATE: '20', KEY_COUNT: '5' },
      }),
    ]);
    running.set('example-worker', worker);
    running.set('example-producer', producer);
  }, 60_000);

  afterAll(async () => {
    const stopping = [...running.entries()]
      .filter(([app]) => app !== 'coordinator')
      .map(([, p]) => p.stop());
    await Promise.all(stopping);
    await running.get('coordinator')?.stop();
  });

  it('finds probes for every app in every file kind', () => {
    const apps = new Set(probes.map((p) => p.app));
    expect([...apps].sort()).toEqual(['coordinator', 'example-producer', 'example-worker']);
    expect(probes.filter((p) => p.app === 'coordinator').map((p) => p.path)).toEqual(
      expect.arrayContaining(['/health/live', '/health/ready']),
    );
  });

  it('every probe path answers 200 on the running app (none is a 404)', async () => {
    const paths = [...new Set(probes.map((p) => `${p.app} ${p.path}`))].sort();
    const results = new Map<string, number>();
    const deadline = Date.now() + 30_000;
    for (const entry of paths) {
      const [app, path] = entry.split(' ') as [AppName, string];
      const service = running.get(app) as ServiceProcess;
      let status = 0;
      while (Date.now() < deadline) {
        status = (await fetch(`${service.url}${path}`, { signal: AbortSignal.timeout(3000) }))
          .status;
        if (status === 200 || status === 404) break;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      results.set(entry, status);
    }
    const bad = [...results]
      .filter(([, status]) => status !== 200)
      .map(([entry, status]) => {
        const sources = probes.filter((p) => `${p.app} ${p.path}` === entry).map((p) => p.source);
        return `${entry} → ${status} (used by ${sources.join('; ')})`;
      });
    expect(bad).toEqual([]);
  });

  it('a route that does not exist is told apart', async () => {
    const coordinator = running.get('coordinator') as ServiceProcess;
    expect((await fetch(`${coordinator.url}/health/nope`)).status).toBe(404);
  });
});
