import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { parseAllDocuments, parse as parseYaml } from 'yaml';
import { repoRoot } from '../../support/service-process.js';

/** The repository root (absolute). */
export const ROOT = repoRoot();
/** `docker/` (absolute). */
export const DOCKER_DIR = join(ROOT, 'docker');
/** `docker/k8s/` (absolute). */
export const K8S_DIR = join(DOCKER_DIR, 'k8s');

/** The apps that are deployed, and the name each one has in the deployment files. */
export type AppName = 'coordinator' | 'example-worker' | 'example-producer';

/** A parsed Kubernetes object (only what the checks read is typed). */
export interface K8sObject {
  readonly apiVersion: string;
  readonly kind: string;
  readonly metadata: { readonly name: string; readonly labels?: Record<string, string> };
  readonly spec?: Record<string, unknown>;
  readonly stringData?: Record<string, string>;
  readonly data?: Record<string, string>;
  /** Where it was read from (relative to the repository root). */
  readonly file: string;
}

/** A YAML document of a file that failed to parse, or parsed to something that is not an object. */
export class ManifestParseError extends Error {
  override readonly name = 'ManifestParseError';
  constructor(file: string, reason: string) {
    super(`${relative(ROOT, file)}: ${reason}`);
  }
}

/** Every `.yaml`/`.yml` file under `dir`. */
export function yamlFiles(dir: string): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(...yamlFiles(path));
    else if (/\.ya?ml$/.test(entry.name)) out.push(path);
  }
  return out.sort();
}

/** Parses every document of a YAML file; throws {@link ManifestParseError} on any YAML error. */
export function parseYamlDocuments(file: string): Array<Record<string, unknown>> {
  const docs = parseAllDocuments(readFileSync(file, 'utf8'));
  const list = Array.isArray(docs) ? docs : [docs];
  return list.map((doc, i) => {
    if (doc.errors.length > 0)
      throw new ManifestParseError(file, doc.errors.map((e) => e.message).join('; '));
    const value: unknown = doc.toJS({ maxAliasCount: 100 });
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new ManifestParseError(file, `document #${i} is not a mapping`);
    }
    return value as Record<string, unknown>;
  });
}

/** The compose file, parsed (YAML merge keys on, as Compose does). */
export function loadCompose(): Record<string, unknown> {
  const file = join(DOCKER_DIR, 'compose.yml');
  return parseYaml(readFileSync(file, 'utf8'), { merge: true }) as Record<string, unknown>;
}

/** A kustomization and the objects it renders (resources resolved recursively). */
export interface Kustomization {
  readonly dir: string;
  readonly namespace: string | undefined;
  /** Every resource file it includes, directly or through other kustomizations. */
  readonly files: readonly string[];
  readonly objects: readonly K8sObject[];
}

/** Reads `dir/kustomization.yaml` and the objects of every resource it lists. */
export function loadKustomization(dir: string): Kustomization {
  const [k] = parseYamlDocuments(join(dir, 'kustomization.yaml')) as Array<{
    namespace?: string;
    resources?: string[];
  }>;
  const files: string[] = [];
  const objects: K8sObject[] = [];
  for (const resource of k?.resources ?? []) {
    const path = resolve(dir, resource);
    if (!existsSync(path)) {
      throw new ManifestParseError(
        join(dir, 'kustomization.yaml'),
        `resource ${resource} does not exist`,
      );
    }
    if (statSync(path).isDirectory()) {
      const nested = loadKustomization(path);
      files.push(join(path, 'kustomization.yaml'), ...nested.files);
      objects.push(...nested.objects);
    } else {
      files.push(path);
      for (const doc of parseYamlDocuments(path)) {
        objects.push({ ...(doc as unknown as K8sObject), file: relative(ROOT, path) });
      }
    }
  }
  return { dir, namespace: k?.namespace, files, objects };
}

// ---- Dockerfiles ----------------------------------------------------------------------------

/** One instruction of a Dockerfile (continuations joined, comments dropped). */
export interface DockerInstruction {
  readonly keyword: string;
  readonly args: string;
  readonly line: number;
}

/** A build stage: its `FROM` and instructions. */
export interface DockerStage {
  readonly name: string | undefined;
  readonly from: string;
  readonly instructions: readonly DockerInstruction[];
}

/** A parsed Dockerfile. */
export interface Dockerfile {
  readonly file: string;
  /** `ARG`s before the first `FROM`, with their defaults. */
  readonly globalArgs: ReadonlyMap<string, string | undefined>;
  readonly stages: readonly DockerStage[];
}

/** Parses a Dockerfile: instructions per stage, global ARG defaults. */
export function parseDockerfile(file: string): Dockerfile {
  const lines = readFileSync(file, 'utf8').split('\n');
  const instructions: DockerInstruction[] = [];
  let current = '';
  let start = 0;
  lines.forEach((raw, i) => {
    const line = raw.trimEnd();
    if (current === '' && (line.trim() === '' || line.trim().startsWith('#'))) return;
    if (current !== '' && line.trim().startsWith('#')) return;
    if (current === '') start = i + 1;
    if (line.endsWith('\\')) {
      current += `${line.slice(0, -1)} `;
      return;
    }
    current += line;
    const match = /^\s*([A-Za-z]+)\s+([\s\S]*)$/.exec(current);
    if (match)
      instructions.push({
        keyword: (match[1] as string).toUpperCase(),
        args: (match[2] as string).trim(),
        line: start,
      });
    current = '';
  });
  const globalArgs = new Map<string, string | undefined>();
  const stages: Array<{
    name: string | undefined;
    from: string;
    instructions: DockerInstruction[];
  }> = [];
  for (const ins of instructions) {
    if (ins.keyword === 'FROM') {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(ins.args);
      stages.push({ from: m?.[1] ?? ins.args, name: m?.[2], instructions: [] });
    } else if (stages.length === 0) {
      if (ins.keyword === 'ARG') {
        const [name, value] = splitArg(ins.args);
        globalArgs.set(name, value);
      }
    } else {
      (stages[stages.length - 1] as { instructions: DockerInstruction[] }).instructions.push(ins);
    }
  }
  return { file, globalArgs, stages };
}

function splitArg(text: string): [string, string | undefined] {
  const eq = text.indexOf('=');
  return eq < 0 ? [text.trim(), undefined] : [text.slice(0, eq).trim(), text.slice(eq + 1).trim()];
}

/**
 * The variables in effect in `stage` for `${NAME}` expansion: its ARGs (defaults from the stage,
 * else the global ARG, overridden by `buildArgs`) and the ENVs set before `upTo`.
 */
export function stageVariables(
  dockerfile: Dockerfile,
  stage: DockerStage,
  buildArgs: Readonly<Record<string, string>> = {},
  upTo = Number.POSITIVE_INFINITY,
): Map<string, string> {
  const vars = new Map<string, string>();
  for (const ins of stage.instructions) {
    if (ins.line >= upTo) break;
    if (ins.keyword === 'ARG') {
      const [name, value] = splitArg(ins.args);
      const chosen = buildArgs[name] ?? value ?? dockerfile.globalArgs.get(name);
      if (chosen !== undefined) vars.set(name, chosen);
    } else if (ins.keyword === 'ENV') {
      for (const m of ins.args.matchAll(/([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\S*)/g)) {
        vars.set(m[1] as string, expand((m[2] as string).replace(/^"|"$/g, ''), vars));
      }
    }
  }
  return vars;
}

/** Expands `${NAME}` / `$NAME` with `vars` (unknown names stay as they are). */
export function expand(text: string, vars: ReadonlyMap<string, string>): string {
  return text.replace(
    /\$\{(\w+)\}|\$(\w+)/g,
    (whole, a: string | undefined, b: string | undefined) => vars.get((a ?? b) as string) ?? whole,
  );
}

/** The JSON array of an exec-form instruction (`CMD ["node", "main.js"]`). */
export function execForm(args: string): string[] {
  const parsed: unknown = JSON.parse(args);
  if (!Array.isArray(parsed) || !parsed.every((a) => typeof a === 'string')) {
    throw new Error(`not an exec-form JSON array of strings: ${args}`);
  }
  return parsed as string[];
}

/** Whether `path` (relative to the build context) is excluded by `.dockerignore`. */
export function isDockerIgnored(
  path: string,
  patterns: readonly string[] = dockerignore(),
): boolean {
  let ignored = false;
  for (const raw of patterns) {
    const negated = raw.startsWith('!');
    const pattern = (negated ? raw.slice(1) : raw).replace(/^\/+/, '').replace(/\/+$/, '');
    // `**/` matches any number of directories (none included), `*` and `?` stay in one segment.
    const source = pattern
      .split('**/')
      .map((piece) =>
        piece
          .split('**')
          .map((part) =>
            part
              .replace(/[.+^${}()|[\]\\]/g, '\\$&')
              .replace(/\*/g, '[^/]*')
              .replace(/\?/g, '[^/]'),
          )
          .join('.*'),
      )
      .join('(?:.*/)?');
    if (new RegExp(`^${source}(/.*)?$`).test(path)) ignored = !negated;
  }
  return ignored;
}

/** The patterns of the repository's `.dockerignore`. */
export function dockerignore(): string[] {
  return readFileSync(join(ROOT, '.dockerignore'), 'utf8')
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('#'));
}

// ---- What the apps accept -------------------------------------------------------------------

/** Environment variables each app reads (from its configuration code). */
export function envNamesOf(app: AppName): Set<string> {
  const read = (path: string): string => readFileSync(join(ROOT, path), 'utf8');
  const names = new Set<string>(['NODE_ENV']);
  if (app === 'coordinator') {
    const source = read('apps/coordinator/src/config/coordinator-config.ts');
    const schema = source.slice(source.indexOf('z\n  .object({'), source.indexOf('.superRefine('));
    for (const m of schema.matchAll(/^ {4}([A-Z][A-Z0-9_]+):/gm)) names.add(m[1] as string);
    return names;
  }
  const file =
    app === 'example-worker'
      ? 'apps/example-worker/src/worker-config.ts'
      : 'apps/example-producer/src/producer-config.ts';
  const source = read(file);
  for (const m of source.matchAll(/env\.([A-Z][A-Z0-9_]+)|int\((?:env, )?'([A-Z][A-Z0-9_]+)'/g)) {
    names.add((m[1] ?? m[2]) as string);
  }
  // The library's default member identity (docs/protocol.md §7) reads these.
  for (const m of read('libs/stream-coordinator/src/identity/member-id.ts').matchAll(
    /env\.([A-Z][A-Z0-9_]+)/g,
  )) {
    names.add(m[1] as string);
  }
  return names;
}

/** The library's default `shutdownTimeoutMs` and `requestTimeoutMs` (ms). */
export function libraryTimeouts(): { shutdownTimeoutMs: number; requestTimeoutMs: number } {
  const source = readFileSync(
    join(ROOT, 'libs/stream-coordinator/src/constants/stream-coordinator.constants.ts'),
    'utf8',
  );
  const defaults = source.slice(source.indexOf('STREAM_COORDINATOR_DEFAULTS'));
  const value = (name: string): number => {
    const m = new RegExp(`${name}: ([\\d_]+)`).exec(defaults);
    if (!m) throw new Error(`no default ${name} in stream-coordinator.constants.ts`);
    return Number((m[1] as string).replace(/_/g, ''));
  };
  return {
    shutdownTimeoutMs: value('shutdownTimeoutMs'),
    requestTimeoutMs: value('requestTimeoutMs'),
  };
}

// ---- Probes ---------------------------------------------------------------------------------

/** One HTTP health probe found in a deployment file. */
export interface Probe {
  readonly app: AppName;
  readonly path: string;
  /** `live` probes must answer 200 on a healthy process; `ready` ones may answer 503. */
  readonly kind: 'live' | 'ready';
  /** Where it was found (for messages). */
  readonly source: string;
}

/** The route a `node -e "fetch('http://127.0.0.1:<port><path>'…"` health command probes. */
export function fetchProbe(command: string): { port: string; path: string } | null {
  const m = /fetch\('http:\/\/127\.0\.0\.1:(\d+|'\+\(?process\.env\.PORT[^+]*\+')([^']*)'/.exec(
    command,
  );
  if (!m) return null;
  return { port: m[1] as string, path: m[2] as string };
}

/** The app a compose service or a Kubernetes image runs. */
export function appOfImage(image: string): AppName | undefined {
  const name = image.split(':')[0] ?? '';
  if (name.endsWith('redis-stream-coordinator')) return 'coordinator';
  if (name.endsWith('redis-stream-coordinator-worker')) return 'example-worker';
  if (name.endsWith('redis-stream-coordinator-producer')) return 'example-producer';
  return undefined;
}

/** Parses a Compose duration (`30s`, `1m30s`, `500ms`) to seconds. */
export function composeSeconds(value: string): number {
  let total = 0;
  for (const m of value.matchAll(/(\d+(?:\.\d+)?)(ms|h|m|s)/g)) {
    const n = Number(m[1]);
    total += m[2] === 'ms' ? n / 1000 : m[2] === 'h' ? n * 3600 : m[2] === 'm' ? n * 60 : n;
  }
  return total;
}

/** Replaces Compose interpolations `${VAR:-default}` / `${VAR-default}` / `${VAR}` by their defaults (or ''). */
export function composeDefaults(value: string): string {
  return value.replace(
    /\$\{(\w+)(?::?-([^}]*))?\}/g,
    (_, __: string, fallback: string | undefined) => fallback ?? '',
  );
}

/** The directory of a file, relative to the repository root. */
export function relativeDir(file: string): string {
  return relative(ROOT, dirname(file));
}
