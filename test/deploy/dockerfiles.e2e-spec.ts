import { existsSync, readFileSync } from 'node:fs';
import { join, normalize, posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ciNodeVersions } from '../support/ci-node-versions.js';
import {
  type AppName,
  type Dockerfile,
  type DockerStage,
  DOCKER_DIR,
  execForm,
  expand,
  fetchProbe,
  isDockerIgnored,
  parseDockerfile,
  ROOT,
  stageVariables,
} from './support/deploy-files.js';

/**
 * Offline validation of the Dockerfiles (no Docker engine here): the build is simulated from
 * the instructions — every COPY source exists in the build context and is not excluded by
 * .dockerignore, `npm ci` has the manifests it needs, the `tsc -b` project and everything it
 * references (and extends) is copied, the runtime stage copies exactly the compiled output the
 * build produces, and the CMD's entry point is one that `npm run build` really emits. The
 * runtime stage is non-root, stops on SIGTERM and has a HEALTHCHECK on the app's port.
 */

interface Variant {
  readonly file: string;
  readonly app: AppName;
  readonly args: Readonly<Record<string, string>>;
}

const VARIANTS: readonly Variant[] = [
  { file: 'docker/Dockerfile', app: 'coordinator', args: {} },
  { file: 'docker/Dockerfile.worker', app: 'example-worker', args: {} },
  // docker/compose.yml builds the producer from the worker's Dockerfile with these args.
  {
    file: 'docker/Dockerfile.worker',
    app: 'example-producer',
    args: { APP: 'example-producer', PORT: '7600', HEALTH_PATH: '/health/live' },
  },
];

interface Copy {
  readonly from: string | undefined;
  readonly sources: string[];
  readonly dest: string;
}

function copiesOf(
  dockerfile: Dockerfile,
  stage: DockerStage,
  args: Readonly<Record<string, string>>,
): Copy[] {
  const vars = stageVariables(dockerfile, stage, args);
  return stage.instructions
    .filter((i) => i.keyword === 'COPY')
    .map((i) => {
      const parts = expand(i.args, vars).split(/\s+/);
      const from = parts.find((p) => p.startsWith('--from='))?.slice('--from='.length);
      const paths = parts.filter((p) => !p.startsWith('--'));
      return { from, sources: paths.slice(0, -1), dest: paths[paths.length - 1] as string };
    });
}

/** The stage `name` refers to and the stages it builds on (`FROM deps AS build`). */
function lineage(dockerfile: Dockerfile, name: string): DockerStage[] {
  const out: DockerStage[] = [];
  let stage = dockerfile.stages.find((s) => s.name === name);
  while (stage) {
    out.unshift(stage);
    const parent = stage.from;
    stage = dockerfile.stages.find((s) => s.name === parent);
  }
  return out;
}

/** Paths (relative to /app) copied into a stage and its ancestors. */
function contextCopies(
  dockerfile: Dockerfile,
  stages: readonly DockerStage[],
  args: Readonly<Record<string, string>>,
): string[] {
  const out: string[] = [];
  for (const stage of stages) {
    for (const copy of copiesOf(dockerfile, stage, args)) {
      if (copy.from !== undefined) continue;
      for (const source of copy.sources) {
        const dest =
          copy.dest.endsWith('/') || copy.sources.length > 1
            ? posix.join(copy.dest, posix.basename(source))
            : copy.dest;
        out.push(normalize(dest === './' || dest === '.' ? source : dest));
      }
    }
  }
  return out;
}

/** Whether `path` (relative to /app) is inside something that was copied. */
const isCopied = (copied: readonly string[], path: string): boolean =>
  copied.some((c) => path === c || path.startsWith(`${c}/`));

/** A tsconfig project and every project it references, each with what it extends. */
function projectClosure(
  project: string,
): Array<{ config: string; extends: string[]; rootDir: string; outDir: string }> {
  const out: Array<{ config: string; extends: string[]; rootDir: string; outDir: string }> = [];
  const visit = (config: string): void => {
    if (out.some((p) => p.config === config)) return;
    const json = JSON.parse(readFileSync(join(ROOT, config), 'utf8')) as {
      extends?: string;
      compilerOptions?: { rootDir?: string; outDir?: string };
      references?: Array<{ path: string }>;
    };
    const dir = posix.dirname(config);
    const extendsList = json.extends ? [posix.normalize(posix.join(dir, json.extends))] : [];
    out.push({
      config,
      extends: extendsList,
      rootDir: posix.normalize(posix.join(dir, json.compilerOptions?.rootDir ?? '.')),
      outDir: posix.normalize(posix.join(dir, json.compilerOptions?.outDir ?? '.')),
    });
    for (const ref of json.references ?? []) {
      const path = posix.normalize(posix.join(dir, ref.path));
      visit(path.endsWith('.json') ? path : posix.join(path, 'tsconfig.json'));
    }
  };
  visit(project);
  return out;
}

describe.each(VARIANTS)('$file ($app), offline', ({ file, app, args }) => {
  const dockerfile = parseDockerfile(join(ROOT, file));
  const runtime = dockerfile.stages[dockerfile.stages.length - 1] as DockerStage;
  const runtimeVars = stageVariables(dockerfile, runtime, args);
  const instruction = (keyword: string): string[] =>
    runtime.instructions.filter((i) => i.keyword === keyword).map((i) => i.args);

  it('is multi-stage: deps, build, prod-deps, runtime (last)', () => {
    expect(dockerfile.stages.map((s) => s.name)).toEqual(['deps', 'build', 'prod-deps', 'runtime']);
    expect(lineage(dockerfile, 'build').map((s) => s.name)).toEqual(['deps', 'build']);
    for (const stage of dockerfile.stages) {
      if (stage.name === 'build') continue;
      expect(expand(stage.from, new Map(dockerfile.globalArgs as Map<string, string>))).toMatch(
        /^node:\d+(-[a-z0-9.]+)?$/,
      );
    }
  });

  it('runs on the newest Node.js LTS the suite runs on (.ci/node-versions)', () => {
    const newest = Math.max(...ciNodeVersions().map((v) => v.nodeMajor));
    const globals = new Map(dockerfile.globalArgs as Map<string, string>);
    for (const stage of dockerfile.stages) {
      if (stage.name === 'build') continue;
      expect(expand(stage.from, globals), `${stage.name}: FROM`).toBe(`node:${newest}-alpine`);
    }
  });

  it('copies only existing, not-ignored sources, and everything the build needs', () => {
    for (const stage of dockerfile.stages) {
      for (const copy of copiesOf(dockerfile, stage, args)) {
        if (copy.from !== undefined) continue;
        for (const source of copy.sources) {
          expect(existsSync(join(ROOT, source)), `${stage.name}: COPY ${source} exists`).toBe(true);
          expect(isDockerIgnored(source), `${stage.name}: ${source} is not in .dockerignore`).toBe(
            false,
          );
        }
      }
    }
    for (const name of ['deps', 'prod-deps']) {
      const copied = contextCopies(dockerfile, lineage(dockerfile, name), args);
      for (const needed of [
        'package.json',
        'package-lock.json',
        'libs/stream-coordinator/package.json',
      ]) {
        expect(isCopied(copied, needed), `${name}: npm ci needs ${needed}`).toBe(true);
      }
      const stage = dockerfile.stages.find((s) => s.name === name) as DockerStage;
      const install = stage.instructions.find((i) => i.keyword === 'RUN')?.args ?? '';
      expect(install).toMatch(/^npm ci /);
      if (name === 'prod-deps') expect(install).toContain('--omit=dev');
    }
    // The build compiles the app's project; the project, what it references and what they
    // extend, and their sources, are all in the build stage.
    const build = dockerfile.stages.find((s) => s.name === 'build') as DockerStage;
    const buildVars = stageVariables(dockerfile, build, args);
    const run = expand(build.instructions.find((i) => i.keyword === 'RUN')?.args ?? '', buildVars);
    const project = /^npx tsc -b (\S+)$/.exec(run)?.[1];
    expect(project, `build RUN is "npx tsc -b <project>": ${run}`).toBe(
      `apps/${app}/tsconfig.app.json`,
    );
    const copied = contextCopies(dockerfile, lineage(dockerfile, 'build'), args);
    for (const p of projectClosure(project as string)) {
      for (const needed of [p.config, ...p.extends, p.rootDir]) {
        expect(isCopied(copied, needed), `build: ${needed} is copied`).toBe(true);
        expect(isDockerIgnored(needed), `build: ${needed} is not ignored`).toBe(false);
      }
    }
    // Sources the build needs are in the context (not ignored).
    expect(isDockerIgnored(`apps/${app}/src/main.ts`)).toBe(false);
    expect(isDockerIgnored('libs/stream-coordinator/src/index.ts')).toBe(false);
  });

  it('the runtime holds what the build produced and starts the built entry point', () => {
    const closure = projectClosure(`apps/${app}/tsconfig.app.json`);
    const fromBuild = copiesOf(dockerfile, runtime, args).filter((c) => c.from === 'build');
    expect(fromBuild.map((c) => c.dest).sort()).toEqual(closure.map((p) => p.outDir).sort());
    for (const copy of fromBuild) expect(copy.sources).toEqual([posix.join('/app', copy.dest)]);
    const fromDeps = copiesOf(dockerfile, runtime, args).filter((c) => c.from === 'prod-deps');
    expect(fromDeps).toEqual([
      { from: 'prod-deps', sources: ['/app/node_modules'], dest: 'node_modules' },
    ]);
    expect(
      isCopied(contextCopies(dockerfile, [runtime], args), 'package.json'),
      'the root package.json ("type": "module")',
    ).toBe(true);
    // CMD: node <entry>, resolved against the last WORKDIR.
    const workdirs = instruction('WORKDIR').map((w) => expand(w, runtimeVars));
    const workdir = workdirs[workdirs.length - 1] as string;
    const cmd = execForm(instruction('CMD').at(-1) as string);
    expect(cmd[0]).toBe('node');
    const entry = posix.relative('/app', posix.resolve(workdir, cmd[1] as string));
    expect(entry).toBe(`apps/${app}/dist/main.js`);
    expect(existsSync(join(ROOT, `apps/${app}/src/main.ts`))).toBe(true);
    expect(existsSync(join(ROOT, entry)), `${entry} exists after npm run build`).toBe(true);
  });

  it('runs as non-root, stops on SIGTERM, health-checks its own port', () => {
    expect(instruction('USER').at(-1)).toBe('node');
    expect(instruction('STOPSIGNAL')).toEqual(['SIGTERM']);
    const health = instruction('HEALTHCHECK').at(-1) ?? '';
    const command = execForm(health.slice(health.indexOf('CMD') + 3).trim());
    expect(command.slice(0, 2)).toEqual(['node', '-e']);
    const script = command[2] as string;
    const port = Number(runtimeVars.get('PORT'));
    const expected = { coordinator: 7400, 'example-worker': 7500, 'example-producer': 7600 }[app];
    expect(port).toBe(expected);
    expect(instruction('EXPOSE').map((e) => expand(e, runtimeVars))).toEqual([String(port)]);
    const path = script.includes('process.env.HEALTH_PATH')
      ? runtimeVars.get('HEALTH_PATH')
      : fetchProbe(script)?.path;
    expect(path).toMatch(/^\/health\/(live|ready)$/);
    expect(script).toContain('process.env.PORT');
    expect(script).toContain('AbortSignal.timeout');
    expect(runtimeVars.get('NODE_ENV')).toBe('production');
  });
});

describe('Dockerfile helpers', () => {
  it('.dockerignore matching follows its patterns and exceptions', () => {
    expect(isDockerIgnored('apps/coordinator/dist/main.js')).toBe(true);
    expect(isDockerIgnored('node_modules/ioredis/package.json')).toBe(true);
    expect(isDockerIgnored('README.md')).toBe(true);
    expect(isDockerIgnored('libs/stream-coordinator/README.md')).toBe(false);
    expect(isDockerIgnored('test/cluster/x.ts')).toBe(true);
    expect(isDockerIgnored('apps/coordinator/src/main.ts')).toBe(false);
  });

  it('the docker dir holds the files the docs name', () => {
    for (const name of ['Dockerfile', 'Dockerfile.worker', 'compose.yml'])
      expect(existsSync(join(DOCKER_DIR, name))).toBe(true);
  });
});
