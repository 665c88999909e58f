import { execFile, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, symlinkSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { onProcessExit } from '../support/process-cleanup.js';
import { repoRoot } from '../support/service-process.js';
import { waitFor } from '../support/wait.js';

/*
 * Apps that use the library as its users do: from the tarball `npm pack` makes, installed without
 * the network. The tarball is extracted into the app's node_modules/@redis-stream-coordinator/
 * nestjs (so its own package.json, `exports` and `files` decide what the app can load), and every
 * other package (Nest, ioredis, zod, Jest, Vitest, TypeScript) is a symlink to the repository's
 * node_modules at the lockfile's versions.
 */

const run = promisify(execFile);
const ROOT = repoRoot();
const LIBRARY = resolve(ROOT, 'libs/stream-coordinator');
const PACKAGE = '@redis-stream-coordinator/nestjs';

/** The tarball of the library and the files it holds. */
export interface PackedLibrary {
  readonly tarball: string;
  readonly files: readonly string[];
}

/** The environment for child `npm`s: none of the `npm_*` variables of an enclosing `npm test`. */
function npmEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(process.env))
    if (!name.toLowerCase().startsWith('npm_')) env[name] = value;
  return { ...env, npm_config_update_notifier: 'false', npm_config_fund: 'false' };
}

/** `npm pack` of the built library into `destination` (throws if it was not built). */
export async function packLibrary(destination: string): Promise<PackedLibrary> {
  for (const built of ['dist/index.js', 'dist/index.d.ts', 'dist/microservices/index.js']) {
    if (!existsSync(join(LIBRARY, built)))
      throw new Error(`libs/stream-coordinator/${built} is missing: run "npm run build" first`);
  }
  const { stdout } = await run('npm', ['pack', '--json', '--pack-destination', destination], {
    cwd: LIBRARY,
    env: npmEnv(),
    timeout: 60_000,
  });
  const [pack] = JSON.parse(stdout) as [{ filename: string; files: { path: string }[] }];
  return { tarball: join(destination, pack.filename), files: pack.files.map((f) => f.path) };
}

/**
 * Copies `test/package/fixtures/<fixture>` (and, when given, an example app's `src/`) to
 * `<parent>/<fixture>`, extracts the tarball as its dependency and links the rest. Returns the
 * app's directory.
 */
export async function installFixture(
  library: PackedLibrary,
  parent: string,
  fixture: string,
  sourcesFrom?: string,
): Promise<string> {
  const dir = join(parent, fixture);
  cpSync(join(ROOT, 'test/package/fixtures', fixture), dir, { recursive: true });
  if (sourcesFrom) {
    cpSync(join(ROOT, sourcesFrom, 'src'), join(dir, 'src'), {
      recursive: true,
      filter: (path) => !path.endsWith('.spec.ts'),
    });
  }
  const modules = join(dir, 'node_modules');
  const installed = join(modules, PACKAGE);
  mkdirSync(installed, { recursive: true });
  await run('tar', ['-xzf', library.tarball, '-C', installed, '--strip-components=1'], {
    timeout: 30_000,
  });
  const scope = PACKAGE.split('/')[0]!;
  for (const entry of readdirSync(join(ROOT, 'node_modules'))) {
    if (entry !== scope) symlinkSync(join(ROOT, 'node_modules', entry), join(modules, entry));
  }
  return dir;
}

/** The repository's `tsc`, for `runNode([TSC, '-p', 'tsconfig.json'], { cwd })`. */
export const TSC = join(ROOT, 'node_modules/typescript/bin/tsc');

/** A fixture app running as a child process until the test stops it. */
export interface AppProcess {
  /** Everything it printed so far. */
  output(): string;
  /**
   * SIGTERM, then how it ended: `exit 0`, or `signal SIGTERM` (Nest's shutdown hooks re-raise the
   * signal after closing the app); `signal SIGKILL` if it did not end within 15 s.
   */
  stop(): Promise<string>;
}

/**
 * Starts `node <entry>` in `cwd` and resolves once its output matches `ready`; rejects with the
 * output when it exits first or the wait times out. Killed at the latest when the test exits.
 */
export async function startApp(
  cwd: string,
  entry: string,
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  timeoutMs = 30_000,
): Promise<AppProcess> {
  const child = spawn(process.execPath, [entry], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const unregister = onProcessExit(() => child.kill('SIGKILL'));
  let output = '';
  const collect = (chunk: Buffer): void => {
    output += chunk.toString();
  };
  child.stdout.on('data', collect);
  child.stderr.on('data', collect);
  const exited = new Promise<string>((resolveExit) =>
    child.once('close', (code, signal) => {
      unregister();
      resolveExit(signal ? `signal ${signal}` : `exit ${code}`);
    }),
  );
  const app: AppProcess = {
    output: () => output,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
  try {
    await waitFor(
      () => {
        if (child.exitCode !== null) throw new Error(`${entry} exited (${child.exitCode})`);
        return ready.test(output);
      },
      { timeoutMs, message: () => `${entry} to print ${ready}:\n${output}` },
    );
  } catch (error) {
    await app.stop();
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${output}`);
  }
  return app;
}
