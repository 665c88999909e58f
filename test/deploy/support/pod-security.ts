import type { K8sObject } from './deploy-files.js';

/**
 * The restricted Pod Security Standard as checks on parsed manifests
 * (https://kubernetes.io/docs/concepts/security/pod-security-standards/: every "baseline" rule
 * and every "restricted" rule), plus this repository's additions: no service account token,
 * resource requests and limits, a read-only root filesystem.
 */

/** The fields of a container the checks read. */
export interface CheckedContainer {
  name: string;
  image?: string;
  command?: string[];
  env?: Array<{
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string } };
  }>;
  ports?: Array<{ containerPort: number; hostPort?: number }>;
  resources?: {
    requests?: Record<string, string | number>;
    limits?: Record<string, string | number>;
  };
  securityContext?: SecurityContext & {
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    procMount?: string;
    capabilities?: { add?: string[]; drop?: string[] };
  };
}

interface SecurityContext {
  runAsNonRoot?: boolean;
  runAsUser?: number;
  seccompProfile?: { type: string };
  appArmorProfile?: { type: string };
  seLinuxOptions?: { type?: string; user?: string; role?: string };
  windowsOptions?: { hostProcess?: boolean };
}

/** The fields of a pod spec the checks read. */
export interface CheckedPodSpec {
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  automountServiceAccountToken?: boolean;
  securityContext?: SecurityContext & { sysctls?: Array<{ name: string }> };
  volumes?: Array<Record<string, unknown> & { name: string }>;
  containers?: CheckedContainer[];
  initContainers?: CheckedContainer[];
  ephemeralContainers?: CheckedContainer[];
}

/** One pod template of a workload (or a bare Pod). */
export interface PodTemplate {
  readonly object: K8sObject;
  readonly labels: Record<string, string>;
  readonly annotations: Record<string, string>;
  readonly spec: CheckedPodSpec;
  /** Containers, init containers and ephemeral containers. */
  readonly containers: CheckedContainer[];
}

/** Every pod template of `objects`: Pods, Deployments, StatefulSets, DaemonSets, Jobs, CronJobs. */
export function podTemplates(objects: readonly K8sObject[]): PodTemplate[] {
  const out: PodTemplate[] = [];
  for (const object of objects) {
    type Template = {
      metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
      spec: CheckedPodSpec;
    };
    let template: Template | undefined;
    const spec = object.spec as Record<string, unknown> | undefined;
    if (object.kind === 'Pod')
      template = { metadata: object.metadata, spec: spec as CheckedPodSpec } as Template;
    else if (['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job'].includes(object.kind))
      template = spec?.template as Template;
    else if (object.kind === 'CronJob')
      template = (spec?.jobTemplate as { spec?: { template?: Template } } | undefined)?.spec
        ?.template;
    if (!template) continue;
    out.push({
      object,
      labels: template.metadata?.labels ?? {},
      annotations: template.metadata?.annotations ?? {},
      spec: template.spec,
      containers: [
        ...(template.spec.containers ?? []),
        ...(template.spec.initContainers ?? []),
        ...(template.spec.ephemeralContainers ?? []),
      ],
    });
  }
  return out;
}

/** Whether a label selector (`matchLabels`) selects `labels`; `{}` selects everything. */
export function selects(selector: Record<string, string>, labels: Record<string, string>): boolean {
  return Object.entries(selector).every(([k, v]) => labels[k] === v);
}

/** Volume types the restricted profile allows. */
const ALLOWED_VOLUMES = new Set([
  'configMap',
  'csi',
  'downwardAPI',
  'emptyDir',
  'ephemeral',
  'persistentVolumeClaim',
  'projected',
  'secret',
]);
/** Sysctls the baseline profile allows. */
const SAFE_SYSCTLS = new Set([
  'kernel.shm_rmid_forced',
  'net.ipv4.ip_local_port_range',
  'net.ipv4.ip_unprivileged_port_start',
  'net.ipv4.tcp_syncookies',
  'net.ipv4.ping_group_range',
  'net.ipv4.ip_local_reserved_ports',
  'net.ipv4.tcp_keepalive_time',
  'net.ipv4.tcp_fin_timeout',
  'net.ipv4.tcp_keepalive_intvl',
  'net.ipv4.tcp_keepalive_probes',
]);
const SELINUX_TYPES = new Set(['', 'container_t', 'container_init_t', 'container_kvm_t']);

/** Every rule `pod` breaks, one line each naming the field (empty: it meets them all). */
export function restrictedViolations(pod: PodTemplate): string[] {
  const out: string[] = [];
  const { spec } = pod;
  const podSc = spec.securityContext ?? {};
  const at = (c: CheckedContainer): string => `container ${c.name}`;

  // Baseline: host namespaces, host paths, host ports, privileged, capabilities, AppArmor,
  // SELinux, /proc mount, seccomp (not Unconfined), sysctls, Windows HostProcess.
  for (const field of ['hostNetwork', 'hostPID', 'hostIPC'] as const)
    if (spec[field] === true) out.push(`${field} must be unset or false`);
  for (const volume of spec.volumes ?? []) {
    const type = Object.keys(volume).find((k) => k !== 'name');
    if (type === undefined || !ALLOWED_VOLUMES.has(type))
      out.push(`volume ${volume.name}: type ${String(type)} is not allowed (hostPath and others)`);
  }
  for (const sysctl of podSc.sysctls ?? [])
    if (!SAFE_SYSCTLS.has(sysctl.name)) out.push(`sysctl ${sysctl.name} is not in the safe set`);
  for (const [key, value] of Object.entries(pod.annotations))
    if (
      key.startsWith('container.apparmor.security.beta.kubernetes.io/') &&
      value !== 'runtime/default' &&
      !value.startsWith('localhost/')
    )
      out.push(`AppArmor annotation ${key}=${value}`);
  const contexts: Array<[string, SecurityContext | undefined]> = [
    ['pod', podSc],
    ...pod.containers.map((c): [string, SecurityContext | undefined] => [at(c), c.securityContext]),
  ];
  for (const [where, sc] of contexts) {
    if (sc?.appArmorProfile && !['RuntimeDefault', 'Localhost'].includes(sc.appArmorProfile.type))
      out.push(`${where}: appArmorProfile ${sc.appArmorProfile.type}`);
    if (sc?.seLinuxOptions) {
      if (!SELINUX_TYPES.has(sc.seLinuxOptions.type ?? ''))
        out.push(`${where}: seLinuxOptions.type ${sc.seLinuxOptions.type}`);
      if (sc.seLinuxOptions.user || sc.seLinuxOptions.role)
        out.push(`${where}: seLinuxOptions.user/role must be unset`);
    }
    if (sc?.windowsOptions?.hostProcess === true) out.push(`${where}: hostProcess`);
    if (sc?.runAsUser === 0) out.push(`${where}: runAsUser 0`);
    if (sc?.seccompProfile && !['RuntimeDefault', 'Localhost'].includes(sc.seccompProfile.type))
      out.push(`${where}: seccompProfile ${sc.seccompProfile.type} (RuntimeDefault or Localhost)`);
  }
  for (const c of pod.containers) {
    const sc = c.securityContext ?? {};
    if (sc.privileged === true) out.push(`${at(c)}: privileged`);
    if (sc.procMount !== undefined && sc.procMount !== 'Default') out.push(`${at(c)}: procMount`);
    for (const port of c.ports ?? [])
      if (port.hostPort !== undefined && port.hostPort !== 0)
        out.push(`${at(c)}: hostPort ${port.hostPort}`);

    // Restricted: no privilege escalation, non-root, seccomp set, drop ALL, add at most
    // NET_BIND_SERVICE.
    if (sc.allowPrivilegeEscalation !== false)
      out.push(`${at(c)}: allowPrivilegeEscalation must be false`);
    if (sc.runAsNonRoot !== true && podSc.runAsNonRoot !== true)
      out.push(`${at(c)}: runAsNonRoot must be true (pod or container)`);
    if (sc.runAsNonRoot === false) out.push(`${at(c)}: runAsNonRoot false`);
    if (!sc.seccompProfile && !podSc.seccompProfile)
      out.push(`${at(c)}: seccompProfile must be RuntimeDefault or Localhost (pod or container)`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL'))
      out.push(`${at(c)}: capabilities.drop must include ALL`);
    for (const cap of sc.capabilities?.add ?? [])
      if (cap !== 'NET_BIND_SERVICE') out.push(`${at(c)}: capabilities.add ${cap}`);

    // This repository's additions.
    if (sc.readOnlyRootFilesystem !== true)
      out.push(`${at(c)}: readOnlyRootFilesystem must be true`);
    for (const kind of ['requests', 'limits'] as const)
      for (const resource of ['cpu', 'memory'])
        if (c.resources?.[kind]?.[resource] === undefined)
          out.push(`${at(c)}: resources.${kind}.${resource} must be set`);
  }
  if (spec.automountServiceAccountToken !== false)
    out.push('automountServiceAccountToken must be false');
  return out;
}
