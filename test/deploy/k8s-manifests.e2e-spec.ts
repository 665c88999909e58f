import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadCoordinatorConfig } from '../../apps/coordinator/src/config/coordinator-config.js';
import { loadWorkerConfig } from '../../apps/example-worker/src/worker-config.js';
import {
  appOfImage,
  envNamesOf,
  K8S_DIR,
  type K8sObject,
  libraryTimeouts,
  loadKustomization,
  parseYamlDocuments,
  ROOT,
  yamlFiles,
} from './support/deploy-files.js';

/**
 * Offline validation of the Kubernetes manifests (docker/k8s): they parse, and the fields that
 * matter agree with the code — env names with the apps' configuration, probe ports with the
 * container ports, secret references with the Secret, selectors with the pod labels, grace
 * periods with the drain timeouts. Probe paths are checked against the running apps in
 * probe-routes.e2e-spec.ts.
 */

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}
interface Probe {
  httpGet?: { path: string; port: number | string };
  exec?: { command: string[] };
  tcpSocket?: { port: number | string };
}
interface Container {
  name: string;
  image: string;
  ports?: Array<{ name?: string; containerPort: number }>;
  env?: EnvVar[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] }; sleep?: { seconds: number } } };
  securityContext?: { allowPrivilegeEscalation?: boolean; runAsNonRoot?: boolean };
}
interface PodSpec {
  containers: Container[];
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
}
interface WorkloadSpec {
  replicas?: number;
  serviceName?: string;
  selector: { matchLabels: Record<string, string> };
  template: { metadata: { labels: Record<string, string> }; spec: PodSpec };
}

const VARIANTS = ['workers-dynamic', 'workers-static'] as const;
const variants = VARIANTS.map((name) => ({ name, ...loadKustomization(join(K8S_DIR, name)) }));

const isWorkload = (o: K8sObject): boolean => o.kind === 'Deployment' || o.kind === 'StatefulSet';
const spec = <T>(o: K8sObject): T => o.spec as T;
const matches = (selector: Record<string, string>, labels: Record<string, string>): boolean =>
  Object.entries(selector).every(([k, v]) => labels[k] === v);
const envOf = (c: Container): Map<string, EnvVar> => new Map((c.env ?? []).map((e) => [e.name, e]));

/**
 * Names a container's env defines only to be expanded into another value (`$(NAME)`, which
 * Kubernetes expands from variables defined earlier in the list), e.g. `REDIS_PASSWORD` in
 * `REDIS_URL`: the app never reads them.
 */
function expandedOnly(c: Container): Set<string> {
  const used = new Set<string>();
  for (const e of c.env ?? [])
    for (const m of (e.value ?? '').matchAll(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g))
      used.add(m[1] as string);
  return used;
}

/**
 * The env of a container as the app sees it: secrets replaced by a placeholder token, `$(NAME)`
 * expanded from earlier entries, names only used in expansions left out.
 */
function plainEnv(c: Container): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of c.env ?? []) {
    // a Secret's value: one of its own per secret key, so two roles never share a token
    const secret = e.valueFrom?.secretKeyRef;
    const raw =
      e.value ??
      (secret ? `${secret.name}-${secret.key}-from-the-kubernetes-secret` : 'downward-api-value');
    out[e.name] = raw.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, name: string) =>
      name in out ? (out[name] as string) : all,
    );
  }
  for (const name of expandedOnly(c)) delete out[name];
  return out;
}

function only<T>(list: readonly T[], what: string): T {
  expect(list, what).toHaveLength(1);
  return list[0] as T;
}

function containerOf(
  objects: readonly K8sObject[],
  name: string,
  kind?: string,
): { object: K8sObject; pod: PodSpec; container: Container } {
  const object = only(
    objects.filter(
      (o) => isWorkload(o) && o.metadata.name === name && (kind === undefined || o.kind === kind),
    ),
    `one workload named ${name}`,
  );
  const pod = spec<WorkloadSpec>(object).template.spec;
  return { object, pod, container: only(pod.containers, `${name}: one container`) };
}

/** Milliseconds of a preStop pause (`node -e 'setTimeout(…, ms)'` or the `sleep` action). */
function preStopMs(c: Container): number {
  const pre = c.lifecycle?.preStop;
  if (pre?.sleep) return pre.sleep.seconds * 1000;
  const command = pre?.exec?.command.join(' ') ?? '';
  const m = /setTimeout\([^,]+,\s*(\d+)\)/.exec(command) ?? /\bsleep (\d+)/.exec(command);
  if (!m) return 0;
  return command.includes('setTimeout') ? Number(m[1]) : Number(m[1]) * 1000;
}

describe('Kubernetes manifests (offline)', () => {
  it('every YAML file parses and is part of a variant', () => {
    const files = yamlFiles(K8S_DIR);
    expect(files.length).toBeGreaterThanOrEqual(8);
    for (const file of files)
      expect(() => parseYamlDocuments(file), relative(ROOT, file)).not.toThrow();
    const used = new Set(variants.flatMap((v) => [join(v.dir, 'kustomization.yaml'), ...v.files]));
    const orphans = files.filter((f) => !used.has(f)).map((f) => relative(ROOT, f));
    expect(orphans).toEqual([]);
    for (const v of variants) {
      for (const o of v.objects) {
        expect(typeof o.apiVersion, `${o.file}: apiVersion`).toBe('string');
        expect(typeof o.kind, `${o.file}: kind`).toBe('string');
        expect(o.metadata?.name, `${o.file}: metadata.name`).toMatch(
          /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/,
        );
      }
      const names = v.objects.map((o) => `${o.kind}/${o.metadata.name}`);
      expect(new Set(names).size, `${v.name}: duplicate objects`).toBe(names.length);
    }
  });

  it('the coordinator: 2 replicas, Service, PDB, Terminus probes on its port, env of its config table', () => {
    for (const v of variants) {
      const { object, pod, container } = containerOf(v.objects, 'coordinator', 'Deployment');
      const workload = spec<WorkloadSpec>(object);
      expect(workload.replicas).toBe(2);
      expect(appOfImage(container.image)).toBe('coordinator');
      const env = plainEnv(container);
      const known = envNamesOf('coordinator');
      expect(Object.keys(env).filter((n) => !known.has(n))).toEqual([]);
      // The values pass the coordinator's own validation (secrets as placeholders).
      const config = loadCoordinatorConfig(env);
      const port = only(container.ports ?? [], 'coordinator: one port');
      expect(port.containerPort).toBe(config.port);
      expect(container.readinessProbe?.httpGet?.path).toBe('/health/ready');
      expect(container.livenessProbe?.httpGet?.path).toBe('/health/live');
      for (const probe of [container.readinessProbe, container.livenessProbe]) {
        expect([port.name, port.containerPort]).toContain(probe?.httpGet?.port);
      }
      // Shutdown: readiness 503 for SHUTDOWN_GRACE_MS, then the server drains.
      expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThanOrEqual(
        config.shutdownGraceMs + 5000,
      );
      const services = v.objects.filter(
        (o) =>
          o.kind === 'Service' &&
          matches(
            (o.spec as { selector: Record<string, string> }).selector,
            workload.template.metadata.labels,
          ),
      );
      const service = only(services, 'one Service selects the coordinator pods');
      const servicePort = only(
        (service.spec as { ports: Array<{ port: number; targetPort: number | string }> }).ports,
        'coordinator Service: one port',
      );
      expect([port.name, port.containerPort]).toContain(servicePort.targetPort);
      const pdb = only(
        v.objects.filter(
          (o) =>
            o.kind === 'PodDisruptionBudget' &&
            matches(
              (o.spec as { selector: { matchLabels: Record<string, string> } }).selector
                .matchLabels,
              workload.template.metadata.labels,
            ),
        ),
        'one PDB for the coordinator',
      );
      expect((pdb.spec as { minAvailable?: number }).minAvailable).toBeGreaterThanOrEqual(1);
      expect((pdb.spec as { minAvailable?: number }).minAvailable).toBeLessThan(2);
    }
  });

  it('workers: downward API identity, their config table, probes on their port, grace ≥ drain + leave', () => {
    const { shutdownTimeoutMs, requestTimeoutMs } = libraryTimeouts();
    for (const v of variants) {
      const kind = v.name === 'workers-static' ? 'StatefulSet' : 'Deployment';
      const { object, pod, container } = containerOf(v.objects, 'worker', kind);
      expect(appOfImage(container.image)).toBe('example-worker');
      const env = envOf(container);
      for (const name of expandedOnly(container)) env.delete(name);
      expect(env.get('POD_IP')?.valueFrom?.fieldRef?.fieldPath).toBe('status.podIP');
      expect(env.get('POD_NAME')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
      if (kind === 'StatefulSet') {
        // Static membership: instanceId = the pod name.
        expect(env.get('INSTANCE_ID')?.valueFrom?.fieldRef?.fieldPath).toBe('metadata.name');
        const headless = v.objects.find(
          (o) => o.kind === 'Service' && o.metadata.name === spec<WorkloadSpec>(object).serviceName,
        );
        expect(headless, 'the StatefulSet’s serviceName names a Service').toBeDefined();
        expect((headless?.spec as { clusterIP?: string } | undefined)?.clusterIP).toBe('None');
      } else {
        expect(env.has('INSTANCE_ID')).toBe(false);
      }
      expect(
        env.has('MEMBER_ID'),
        'the member id comes from the downward API, not a fixed value',
      ).toBe(false);
      const known = envNamesOf('example-worker');
      expect([...env.keys()].filter((n) => !known.has(n))).toEqual([]);
      const config = loadWorkerConfig(plainEnv(container));
      const port = only(container.ports ?? [], 'worker: one port');
      expect(port.containerPort).toBe(config.port);
      for (const probe of [container.readinessProbe, container.livenessProbe]) {
        expect(probe?.httpGet?.path, 'worker probes are HTTP').toMatch(/^\//);
        expect([port.name, port.containerPort]).toContain(probe?.httpGet?.port);
      }
      // The coordinator URL names the coordinator Service and its port.
      const url = new URL(config.coordinatorUrl);
      const coordinatorService = v.objects.find(
        (o) => o.kind === 'Service' && o.metadata.name === url.hostname,
      );
      expect(coordinatorService, `COORDINATOR_URL host ${url.hostname} is a Service`).toBeDefined();
      const servicePorts =
        (coordinatorService?.spec as { ports: Array<{ port: number }> } | undefined)?.ports ?? [];
      expect(servicePorts.map((p) => p.port)).toContain(Number(url.port));
      // Graceful leave: preStop, then drain for shutdownTimeoutMs, then the in-flight heartbeat
      // and the leave request (requestTimeoutMs each); the grace period covers all of it.
      const drain = config.shutdownTimeoutMs ?? shutdownTimeoutMs;
      const needed = preStopMs(container) + drain + 2 * requestTimeoutMs;
      expect(preStopMs(container)).toBeGreaterThan(0);
      expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThanOrEqual(needed);
      const pdb = v.objects.find(
        (o) =>
          o.kind === 'PodDisruptionBudget' &&
          matches(
            (o.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
            spec<WorkloadSpec>(object).template.metadata.labels,
          ),
      );
      expect(pdb, 'a PDB for the workers').toBeDefined();
    }
  });

  it('selectors match their pods, secrets referenced exist, pods run as non-root', () => {
    for (const v of variants) {
      const workloads = v.objects.filter(isWorkload);
      for (const w of workloads) {
        const s = spec<WorkloadSpec>(w);
        expect(
          matches(s.selector.matchLabels, s.template.metadata.labels),
          `${w.file} ${w.kind}/${w.metadata.name}: selector ⊆ pod labels`,
        ).toBe(true);
        expect(Object.keys(s.selector.matchLabels).length).toBeGreaterThan(0);
        const pod = s.template.spec;
        expect(pod.securityContext?.runAsNonRoot, `${w.metadata.name}: runAsNonRoot`).toBe(true);
        for (const c of pod.containers) {
          expect(c.securityContext?.allowPrivilegeEscalation, `${w.metadata.name}/${c.name}`).toBe(
            false,
          );
          for (const e of c.env ?? []) {
            const ref = e.valueFrom?.secretKeyRef;
            if (!ref) continue;
            const secret = v.objects.find(
              (o) => o.kind === 'Secret' && o.metadata.name === ref.name,
            );
            expect(secret, `${w.metadata.name}: Secret ${ref.name} exists`).toBeDefined();
            const keys = Object.keys({ ...secret?.stringData, ...secret?.data });
            expect(keys, `${w.metadata.name}: Secret ${ref.name} has key ${ref.key}`).toContain(
              ref.key,
            );
          }
          const portNames = new Set((c.ports ?? []).map((p) => p.name).filter(Boolean));
          for (const probe of [c.readinessProbe, c.livenessProbe]) {
            const port = probe?.httpGet?.port ?? probe?.tcpSocket?.port;
            if (typeof port === 'string')
              expect(portNames, `${w.metadata.name}: probe port ${port}`).toContain(port);
          }
        }
      }
      for (const o of v.objects.filter(
        (x) => x.kind === 'Service' || x.kind === 'PodDisruptionBudget',
      )) {
        const selector =
          o.kind === 'Service'
            ? (o.spec as { selector: Record<string, string> }).selector
            : (o.spec as { selector: { matchLabels: Record<string, string> } }).selector
                .matchLabels;
        const targets = workloads.filter((w) =>
          matches(selector, spec<WorkloadSpec>(w).template.metadata.labels),
        );
        expect(targets.length, `${o.kind}/${o.metadata.name} selects exactly one workload`).toBe(1);
        if (o.kind !== 'Service') continue;
        const ports = spec<WorkloadSpec>(targets[0] as K8sObject).template.spec.containers.flatMap(
          (c) => c.ports ?? [],
        );
        for (const p of (o.spec as { ports: Array<{ targetPort: number | string }> }).ports) {
          expect(
            ports.some((cp) => cp.name === p.targetPort || cp.containerPort === p.targetPort),
            `${o.metadata.name}: targetPort ${p.targetPort}`,
          ).toBe(true);
        }
      }
      // Every tokens Secret value is a placeholder to be replaced (never a real token in git).
      for (const secret of v.objects.filter((o) => o.kind === 'Secret')) {
        for (const value of Object.values(secret.stringData ?? {}))
          expect(value).toMatch(/^replace-me/);
      }
    }
  });

  it('the checks catch a broken manifest', () => {
    const env = {
      PORT: '7400',
      COORDINATOR_TOKEN: 't',
      SESSION_TIMEOUT_MS: '100',
      HEARTBEAT_INTERVAL_MS: '200',
    };
    expect(() => loadCoordinatorConfig(env)).toThrow(/HEARTBEAT_INTERVAL_MS/);
    expect(envNamesOf('coordinator').has('SESION_TIMEOUT_MS')).toBe(false);
    expect(matches({ app: 'a' }, { app: 'b' })).toBe(false);
    expect(
      preStopMs({
        name: 'c',
        image: 'i',
        lifecycle: { preStop: { exec: { command: ['sleep 3'] } } },
      }),
    ).toBe(3000);
  });
});
