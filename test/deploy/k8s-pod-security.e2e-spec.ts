import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findExecutable } from '../support/find-executable.js';
import {
  DOCKER_DIR,
  K8S_DIR,
  type K8sObject,
  loadKustomization,
  parseYamlDocuments,
} from './support/deploy-files.js';
import {
  type PodTemplate,
  podTemplates,
  restrictedViolations,
  selects,
} from './support/pod-security.js';

/**
 * Offline: every pod the manifests under docker/k8s create meets the restricted Pod Security
 * Standard (https://kubernetes.io/docs/concepts/security/pod-security-standards/, every rule of
 * "baseline" and "restricted") and this repository's additions (no service account token,
 * requests and limits, read-only root filesystem, images by digest); NetworkPolicies deny by
 * default and let only workers (and the ingress) reach the coordinator, only the coordinator and
 * workers reach Redis; every Redis client has its own ACL user (docs/operations.md, "Security").
 */

const VARIANTS = ['workers-dynamic', 'workers-static'] as const;
const variants = VARIANTS.map((name) => ({ name, ...loadKustomization(join(K8S_DIR, name)) }));

/**
 * Images not pinned by digest yet, and why. Pin one (`image: name:tag@sha256:…`, see
 * docs/operations.md "Security" › "Kubernetes") and remove it here; the test fails on a stale
 * entry and on any other unpinned image.
 */
const UNPINNED: Record<string, string> = {
  'redis:7-alpine': 'the digest could not be looked up where the manifests were written',
  'redis-stream-coordinator:0.1.0': 'built from this repository: its digest exists once pushed',
  'redis-stream-coordinator-worker:0.1.0':
    'built from this repository: its digest exists once pushed',
};

const podsOf = (objects: readonly K8sObject[]): PodTemplate[] => podTemplates(objects);
const labelsOf = (objects: readonly K8sObject[], name: string): Record<string, string> => {
  const pod = podsOf(objects).find((p) => p.object.metadata.name === name);
  expect(pod, `a workload named ${name}`).toBeDefined();
  return pod?.labels ?? {};
};

interface PolicyPeer {
  podSelector?: { matchLabels?: Record<string, string> };
  namespaceSelector?: { matchLabels?: Record<string, string> };
}
interface NetworkPolicySpec {
  podSelector: { matchLabels?: Record<string, string> };
  policyTypes?: string[];
  ingress?: Array<{ from?: PolicyPeer[]; ports?: Array<{ port: number | string }> }>;
}

describe('Kubernetes manifests: restricted Pod Security Standard (offline)', () => {
  it('every pod meets every rule of the restricted profile and the repository’s additions', () => {
    for (const v of variants) {
      const pods = podsOf(v.objects);
      expect(pods.map((p) => p.object.metadata.name).sort()).toEqual(
        ['coordinator', 'redis', 'worker'].sort(),
      );
      for (const pod of pods) {
        expect(restrictedViolations(pod), `${v.name}: ${pod.object.file}`).toEqual([]);
      }
    }
  });

  it('the namespace enforces the restricted profile', () => {
    const [ns] = parseYamlDocuments(join(K8S_DIR, 'base', 'namespace.yaml')) as Array<{
      metadata: { labels: Record<string, string> };
    }>;
    expect(ns?.metadata.labels['pod-security.kubernetes.io/enforce']).toBe('restricted');
  });

  it('images are pinned by digest, except the listed ones', () => {
    const images = new Set(
      variants.flatMap((v) =>
        podsOf(v.objects).flatMap((p) => p.containers.map((c) => c.image as string)),
      ),
    );
    const unpinned = [...images].filter((i) => !/@sha256:[0-9a-f]{64}$/.test(i)).sort();
    expect(unpinned).toEqual(Object.keys(UNPINNED).sort());
  });

  it('NetworkPolicies: deny by default; coordinator from workers and the ingress; Redis from coordinator and workers', () => {
    for (const v of variants) {
      const policies = v.objects.filter((o) => o.kind === 'NetworkPolicy');
      const specOf = (o: K8sObject): NetworkPolicySpec => o.spec as unknown as NetworkPolicySpec;
      const denyAll = policies.filter(
        (p) =>
          Object.keys(specOf(p).podSelector.matchLabels ?? {}).length === 0 &&
          specOf(p).policyTypes?.includes('Ingress') === true &&
          (specOf(p).ingress ?? []).length === 0,
      );
      expect(denyAll.length, `${v.name}: a default-deny ingress policy`).toBe(1);
      const pods = podsOf(v.objects);
      // Who may reach a workload: the union of the `from` peers of every policy selecting it.
      const peersOf = (name: string): PolicyPeer[] =>
        policies
          .filter((p) =>
            selects(specOf(p).podSelector.matchLabels ?? {}, labelsOf(v.objects, name)),
          )
          .flatMap((p) => (specOf(p).ingress ?? []).flatMap((rule) => rule.from ?? []));
      const podPeers = (name: string): string[] =>
        pods
          .filter((pod) =>
            peersOf(name).some(
              (peer) =>
                peer.namespaceSelector === undefined &&
                peer.podSelector !== undefined &&
                selects(peer.podSelector.matchLabels ?? {}, pod.labels),
            ),
          )
          .map((pod) => pod.object.metadata.name)
          .sort();
      expect(podPeers('redis'), `${v.name}: who reaches Redis`).toEqual(['coordinator', 'worker']);
      expect(podPeers('coordinator'), `${v.name}: who reaches the coordinator`).toEqual(['worker']);
      expect(podPeers('worker'), `${v.name}: who reaches the workers`).toEqual([]);
      // No rule admits everyone (an empty `from`, or a peer without selectors).
      for (const p of policies.filter((x) => !denyAll.includes(x)))
        for (const rule of specOf(p).ingress ?? []) {
          expect(
            rule.from?.length,
            `${p.metadata.name}: a rule with no peers admits all`,
          ).toBeGreaterThan(0);
          expect(rule.ports?.length, `${p.metadata.name}: a rule names its ports`).toBeGreaterThan(
            0,
          );
          for (const peer of rule.from ?? [])
            expect(peer.podSelector ?? peer.namespaceSelector).toBeDefined();
        }
      const ingressNamespaces = peersOf('coordinator')
        .filter((peer) => peer.namespaceSelector)
        .map((peer) => peer.namespaceSelector?.matchLabels?.['kubernetes.io/metadata.name']);
      expect(ingressNamespaces).toContain('ingress-nginx');
    }
  });

  it('Redis runs the shipped ACL scripts; each client has its own user and password', () => {
    for (const v of variants) {
      const configMap = v.objects.find(
        (o) => o.kind === 'ConfigMap' && o.metadata.name === 'redis-acl',
      );
      const data = (configMap as unknown as { data: Record<string, string> } | undefined)?.data;
      for (const file of ['start.sh', 'users-acl.sh'])
        expect(data?.[file], `ConfigMap redis-acl: ${file} is docker/redis/${file}`).toBe(
          readFileSync(join(DOCKER_DIR, 'redis', file), 'utf8'),
        );
      const pods = podsOf(v.objects);
      const redis = pods.find((p) => p.object.metadata.name === 'redis')?.containers[0];
      expect(redis?.command).toEqual(['sh', '/etc/redis-acl/start.sh']);
      const envOf = (c: (typeof pods)[number]['containers'][number] | undefined) =>
        new Map((c?.env ?? []).map((e) => [e.name, e]));
      const redisEnv = envOf(redis);
      const users = { coordinator: 'rsc-coordinator', worker: 'rsc-worker' } as const;
      for (const [name, user] of Object.entries(users)) {
        const env = envOf(pods.find((p) => p.object.metadata.name === name)?.containers[0]);
        expect(env.get('REDIS_URL')?.value).toBe(`redis://${user}:$(REDIS_PASSWORD)@redis:6379`);
        const ref = env.get('REDIS_PASSWORD')?.valueFrom?.secretKeyRef;
        const variable = `REDIS_${user.slice(4).toUpperCase()}_PASSWORD`;
        expect(ref, `${name}: the password Redis gives ${user}`).toEqual(
          redisEnv.get(variable)?.valueFrom?.secretKeyRef,
        );
      }
      expect(redisEnv.get('KEY_PREFIX')?.value).toBe(
        envOf(pods.find((p) => p.object.metadata.name === 'coordinator')?.containers[0]).get(
          'KEY_PREFIX',
        )?.value,
      );
    }
  });

  it('kubectl kustomize builds both variants (when kubectl is installed)', () => {
    const kubectl = findExecutable('kubectl');
    if (!kubectl) return;
    for (const v of variants) {
      const rendered = execFileSync(kubectl, ['kustomize', v.dir], { encoding: 'utf8' });
      const kinds = [...rendered.matchAll(/^kind: (\w+)$/gm)].map((m) => m[1]);
      expect(kinds.length).toBe(v.objects.length);
    }
  });

  it('the checks catch a pod that breaks the profile', () => {
    const [good] = podsOf(variants[0]?.objects ?? []);
    const bad: PodTemplate = {
      ...(good as PodTemplate),
      spec: {
        ...(good as PodTemplate).spec,
        hostNetwork: true,
        automountServiceAccountToken: true,
        securityContext: { seccompProfile: { type: 'Unconfined' } },
        volumes: [{ name: 'root', hostPath: { path: '/' } }],
      },
      containers: [
        {
          name: 'c',
          image: 'busybox',
          securityContext: { privileged: true, capabilities: { add: ['SYS_ADMIN'] } },
          ports: [{ containerPort: 80, hostPort: 80 }],
        },
      ],
    };
    const found = restrictedViolations(bad).join('\n');
    for (const rule of [
      'hostNetwork',
      'seccompProfile',
      'hostPath',
      'privileged',
      'allowPrivilegeEscalation',
      'capabilities.drop',
      'capabilities.add',
      'hostPort',
      'runAsNonRoot',
      'automountServiceAccountToken',
      'readOnlyRootFilesystem',
      'resources',
    ])
      expect(found, rule).toContain(rule);
  });
});
