import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from './service-process.js';

/** One line of `.ci/node-versions`: a Node.js release CI runs the suite on, and with which ioredis. */
export interface CiNodeVersion {
  readonly nodeMajor: number;
  /** The exact version fetched from the npm registry, or `system` (the machine's Node). */
  readonly version: string;
  readonly ioredisMajor: number;
}

/** The lines of `.ci/node-versions` (`<major> <version|system> <integrity|-> <ioredis major>`). */
export function ciNodeVersions(): CiNodeVersion[] {
  return readFileSync(join(repoRoot(), '.ci/node-versions'), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'))
    .map((line) => {
      const [major, version, , ioredis] = line.trim().split(/\s+/);
      return { nodeMajor: Number(major), version: version ?? '', ioredisMajor: Number(ioredis) };
    });
}
