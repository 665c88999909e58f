import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A Node.js binary the bench's consumer and producer processes run on (`--node=20,24`). */
export interface BenchNode {
  /** The major asked for, e.g. `24`: the label of its rows. */
  readonly major: number;
  /** What the binary reports (`process.version` of a child), e.g. `v24.22.3`. */
  readonly version: string;
  /** Path of the `node` binary children are forked with. */
  readonly execPath: string;
}

/** A `--node=` value the runner cannot use. */
export class BenchNodeFlagError extends Error {
  override readonly name = 'BenchNodeFlagError';
}

/** The Node majors listed in `.ci/node-versions` (the ones `.ci/fetch-node` can provide). */
export function listedMajors(nodeVersionsText: string): number[] {
  return nodeVersionsText
    .split('\n')
    .map((line) => /^(\d+)\s/.exec(line)?.[1])
    .filter((m): m is string => m !== undefined)
    .map(Number);
}

/**
 * The majors of `--node=20,24` (in the order given), or `undefined` when the flag is absent.
 * Rejects an empty list, a non-integer, a duplicate and a major not in `listed`.
 */
export function parseNodeFlag(
  args: readonly string[],
  listed: readonly number[],
): number[] | undefined {
  const flags = args.filter((a) => a.startsWith('--node='));
  if (flags.length === 0) return undefined;
  if (flags.length > 1) throw new BenchNodeFlagError('npm run bench: give --node= once');
  const raw = (flags[0] as string).slice('--node='.length);
  const parts = raw.split(',').map((p) => p.trim());
  const majors: number[] = [];
  for (const part of parts) {
    if (!/^\d+$/.test(part)) {
      throw new BenchNodeFlagError(
        `npm run bench: --node=${raw}: "${part}" is not a Node major (e.g. --node=20,24)`,
      );
    }
    const major = Number(part);
    if (!listed.includes(major)) {
      throw new BenchNodeFlagError(
        `npm run bench: --node=${raw}: Node ${major} is not in .ci/node-versions (listed: ${listed.join(', ')})`,
      );
    }
    if (majors.includes(major))
      throw new BenchNodeFlagError(`npm run bench: --node=${raw}: Node ${major} given twice`);
    majors.push(major);
  }
  return majors;
}

/**
 * The binaries of `majors`: `.ci/fetch-node` gives the directory (the machine's Node for its own
 * line, else the release fetched once into the cache), and the binary itself reports its version.
 */
export function resolveBenchNodes(root: string, majors: readonly number[]): BenchNode[] {
  return majors.map((major) => {
    const dir = execFileSync(join(root, '.ci', 'fetch-node'), [String(major)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
      timeout: 660_000,
    }).trim();
    const execPath = join(dir, 'node');
    const version = execFileSync(execPath, ['--version'], { encoding: 'utf8' }).trim();
    return { major, version, execPath };
  });
}

/** `listedMajors` of the repository's `.ci/node-versions`. */
export function readListedMajors(root: string): number[] {
  return listedMajors(readFileSync(join(root, '.ci', 'node-versions'), 'utf8'));
}

/**
 * The sides of every release in one order that alternates between the releases (the first side
 * of each, then the second of each, …), so neither release's runs are bunched in time.
 */
export function interleaveBySlot<T>(perSlot: ReadonlyArray<readonly T[]>): T[] {
  const out: T[] = [];
  const longest = Math.max(0, ...perSlot.map((s) => s.length));
  for (let i = 0; i < longest; i++) {
    for (const slot of perSlot) if (i < slot.length) out.push(slot[i] as T);
  }
  return out;
}
