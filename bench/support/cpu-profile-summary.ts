import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

/** One function's share of a CPU profile. */
export interface ProfileEntry {
  readonly fn: string;
  readonly where: string;
  readonly selfPct: number;
}

interface CpuProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
  children?: number[];
}

/**
 * The functions with the most self time in a V8 `.cpuprofile` (`node --cpu-prof`), idle and
 * garbage collection included as their own entries, as a share of all samples.
 */
export function summarizeCpuProfile(file: string, top = 20, root = process.cwd()): ProfileEntry[] {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as { nodes: CpuProfileNode[] };
  const self = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0) continue;
    total += hits;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = url ? `${relative(root, url.replace(/^file:\/\//, ''))}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'}\t${where}`;
    self.set(key, (self.get(key) ?? 0) + hits);
  }
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, hits]) => {
      const [fn, where] = key.split('\t') as [string, string];
      return { fn, where, selfPct: Math.round((hits / Math.max(1, total)) * 1000) / 10 };
    });
}

/** Every `.cpuprofile` under `dir` (recursively), newest first. */
export function findCpuProfiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else if (name.endsWith('.cpuprofile')) out.push(path);
    }
  };
  try {
    walk(dir);
  } catch {
    return [];
  }
  return out.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
}

/** `node .tools/bench/support/cpu-profile-summary.js <file.cpuprofile> [top]` prints the table. */
if (process.argv[1]?.endsWith('cpu-profile-summary.js') && process.argv[2]) {
  for (const e of summarizeCpuProfile(process.argv[2], Number(process.argv[3] ?? 25))) {
    process.stdout.write(`${e.selfPct.toFixed(1).padStart(5)}%  ${e.fn}  ${e.where}\n`);
  }
}
