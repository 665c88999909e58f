import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCoordinatorConfig } from '../../apps/coordinator/src/config/coordinator-config.js';
import { loadProducerConfig } from '../../apps/example-producer/src/producer-config.js';
import { loadWorkerConfig } from '../../apps/example-worker/src/worker-config.js';
import {
  type AppName,
  appOfImage,
  composeDefaults,
  composeSeconds,
  DOCKER_DIR,
  envNamesOf,
  fetchProbe,
  libraryTimeouts,
  loadCompose,
  parseDockerfile,
  ROOT,
} from './support/deploy-files.js';

/**
 * Offline validation of docker/compose.yml: it parses; Redis, two coordinator replicas, three
 * workers and a producer; builds point at real Dockerfiles with ARGs they declare; every
 * service's env uses names (and values) its app accepts; tokens come from the environment with
 * development defaults; health checks probe the service's own port; grace periods cover the
 * drain. Probe paths are checked against the running apps in probe-routes.e2e-spec.ts.
 */

interface Service {
  image?: string;
  build?: { context: string; dockerfile: string; args?: Record<string, string> };
  deploy?: { replicas?: number };
  environment?: Record<string, string>;
  ports?: string[];
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  stop_signal?: string;
  stop_grace_period?: string;
  command?: string[];
}

const compose = loadCompose() as {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
};
const services = compose.services;

const appOf = (service: Service): AppName | undefined =>
  service.image ? appOfImage(service.image) : undefined;
/**
 * A service's environment as compose would set it (a required variable: a generated-looking value
 * of its own, so two roles never share a token).
 */
const envOf = (service: Service): Record<string, string> =>
  Object.fromEntries(
    Object.entries(service.environment ?? {}).map(([k, v]) => {
      const required = /^\$\{(\w+):\?/.exec(String(v));
      return [
        k,
        required ? `${required[1]?.toLowerCase()}-${'f'.repeat(48)}` : composeDefaults(String(v)),
      ];
    }),
  );

describe('docker/compose.yml (offline)', () => {
  it('runs Redis, two coordinator replicas, three workers and a producer', () => {
    expect(Object.keys(services).sort()).toEqual(['coordinator', 'producer', 'redis', 'worker']);
    expect(services.redis?.image).toMatch(/^redis:7/);
    expect(appOf(services.coordinator as Service)).toBe('coordinator');
    expect(services.coordinator?.deploy?.replicas).toBe(2);
    expect(appOf(services.worker as Service)).toBe('example-worker');
    expect(services.worker?.deploy?.replicas).toBe(3);
    expect(appOf(services.producer as Service)).toBe('example-producer');
    // Two replicas cannot share one host port: a range, one port each.
    expect(services.coordinator?.ports).toEqual(['7400-7401:7400']);
  });

  it('builds from real Dockerfiles with ARGs they declare', () => {
    for (const [name, service] of Object.entries(services)) {
      if (!service.build) continue;
      const context = resolve(DOCKER_DIR, service.build.context);
      expect(context, `${name}: the build context is the repository root`).toBe(ROOT);
      const file = join(context, service.build.dockerfile);
      expect(existsSync(file), `${name}: ${service.build.dockerfile} exists`).toBe(true);
      const dockerfile = parseDockerfile(file);
      const declared = new Set([
        ...dockerfile.globalArgs.keys(),
        ...dockerfile.stages.flatMap((s) =>
          s.instructions
            .filter((i) => i.keyword === 'ARG')
            .map((i) => i.args.split('=')[0] as string),
        ),
      ]);
      for (const arg of Object.keys(service.build.args ?? {}))
        expect(declared, `${name}: build arg ${arg}`).toContain(arg);
      if (service.build.args?.APP)
        expect(existsSync(join(ROOT, 'apps', service.build.args.APP, 'tsconfig.app.json'))).toBe(
          true,
        );
    }
  });

  it('every app service uses env names and values its app accepts', () => {
    const loaders: Record<AppName, (env: Record<string, string>) => { port: number }> = {
      coordinator: (env) => loadCoordinatorConfig(env),
      'example-worker': (env) => loadWorkerConfig(env),
      'example-producer': (env) => loadProducerConfig(env),
    };
    for (const [name, service] of Object.entries(services)) {
      const app = appOf(service);
      if (!app) continue;
      const env = envOf(service);
      const known = envNamesOf(app);
      expect(
        Object.keys(env).filter((n) => !known.has(n)),
        `${name}: unknown variables`,
      ).toEqual([]);
      const config = loaders[app](env);
      const probe = fetchProbe((service.healthcheck?.test ?? []).join(' '));
      expect(probe, `${name}: an HTTP health check`).not.toBeNull();
      expect(Number(probe?.port), `${name}: the health check probes the app's PORT`).toBe(
        config.port,
      );
      if (service.build?.args?.PORT) expect(Number(service.build.args.PORT)).toBe(config.port);
    }
  });

  it('tokens must come from the environment (no defaults); URLs name the services', () => {
    const coordinator = services.coordinator?.environment ?? {};
    expect(coordinator.COORDINATOR_TOKEN).toMatch(/^\$\{COORDINATOR_TOKEN:\?[^}]*openssl[^}]*\}$/);
    expect(coordinator.COORDINATOR_ADMIN_TOKEN).toMatch(
      /^\$\{COORDINATOR_ADMIN_TOKEN:\?[^}]*openssl[^}]*\}$/,
    );
    const coordinatorPort = loadCoordinatorConfig(envOf(services.coordinator as Service)).port;
    for (const name of ['worker', 'producer']) {
      const env = services[name]?.environment ?? {};
      expect(env.COORDINATOR_TOKEN, `${name}: the coordinator's member token`).toBe(
        coordinator.COORDINATOR_TOKEN,
      );
      const url = new URL(env.COORDINATOR_URL ?? '');
      expect(url.hostname).toBe('coordinator');
      expect(Number(url.port)).toBe(coordinatorPort);
    }
    for (const name of ['coordinator', 'worker', 'producer']) {
      const url = new URL(composeDefaults(services[name]?.environment?.REDIS_URL ?? ''));
      expect(url.hostname, `${name}: REDIS_URL names the redis service`).toBe('redis');
    }
  });

  it('health checks everywhere, start order on health, stop grace covers the drain', () => {
    const { shutdownTimeoutMs, requestTimeoutMs } = libraryTimeouts();
    for (const [name, service] of Object.entries(services)) {
      expect(service.healthcheck?.test?.[0], `${name}: a health check`).toBe('CMD');
      for (const [dependency, { condition }] of Object.entries(service.depends_on ?? {})) {
        expect(condition).toBe('service_healthy');
        expect(
          services[dependency]?.healthcheck,
          `${name} waits for ${dependency}, which has a health check`,
        ).toBeDefined();
      }
      if (appOf(service)) expect(service.stop_signal).toBe('SIGTERM');
    }
    const worker = loadWorkerConfig(envOf(services.worker as Service));
    const drain = worker.shutdownTimeoutMs ?? shutdownTimeoutMs;
    expect(
      composeSeconds(services.worker?.stop_grace_period ?? '10s') * 1000,
    ).toBeGreaterThanOrEqual(drain + 2 * requestTimeoutMs);
    const coordinator = loadCoordinatorConfig(envOf(services.coordinator as Service));
    expect(
      composeSeconds(services.coordinator?.stop_grace_period ?? '10s') * 1000,
    ).toBeGreaterThanOrEqual(coordinator.shutdownGraceMs + 5000);
  });

  it('Redis: not on the host, ACL users from the shipped script, one user per app role', () => {
    const redis = services.redis as Service & {
      entrypoint?: string[];
      user?: string;
      volumes?: string[];
    };
    expect(redis.ports, 'Redis is not published on host interfaces').toBeUndefined();
    expect(redis.user).toBe('999:999');
    expect(redis.entrypoint).toEqual(['sh', '/etc/redis-acl/start.sh']);
    const mount = (redis.volumes ?? []).find((v) => v.includes(':/etc/redis-acl'));
    expect(mount, 'docker/redis is mounted at /etc/redis-acl').toBeDefined();
    const hostDir = resolve(DOCKER_DIR, (mount ?? '').split(':')[0] as string);
    for (const script of ['start.sh', 'users-acl.sh'])
      expect(existsSync(join(hostDir, script)), script).toBe(true);
    const redisEnv = envOf(redis);
    expect(redisEnv.KEY_PREFIX).toBe(envOf(services.coordinator as Service).KEY_PREFIX);
    const users: Record<string, string> = {
      coordinator: 'rsc-coordinator',
      worker: 'rsc-worker',
      producer: 'rsc-producer',
    };
    for (const [name, user] of Object.entries(users)) {
      const url = new URL(envOf(services[name] as Service).REDIS_URL ?? '');
      expect(url.username, `${name}: its own Redis user`).toBe(user);
      const variable = `REDIS_${user.slice(4).toUpperCase()}_PASSWORD`;
      expect(decodeURIComponent(url.password), `${name}: password of ${user}`).toBe(
        redisEnv[variable],
      );
      expect(services[name]?.environment?.REDIS_URL).toContain(`\${${variable}:-`);
    }
  });

  it('the helpers catch bad input', () => {
    expect(composeSeconds('1m30s')).toBe(90);
    expect(composeDefaults('${A:-x}/${B}')).toBe('x/');
    expect(fetchProbe("fetch('http://127.0.0.1:7500/health/ready',{})")).toEqual({
      port: '7500',
      path: '/health/ready',
    });
    expect(() => loadWorkerConfig({ PORT: 'x' })).toThrow(/PORT/);
  });
});
