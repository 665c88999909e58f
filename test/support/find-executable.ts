import { accessSync, constants } from 'node:fs';
import { delimiter, join } from 'node:path';

/**
 * The absolute path of `name` on `PATH` (or `name` itself when it contains a `/` and is
 * executable), or `undefined` when there is none.
 */
export function findExecutable(name: string, path = process.env.PATH ?? ''): string | undefined {
  const candidates = name.includes('/')
    ? [name]
    : path
        .split(delimiter)
        .filter(Boolean)
        .map((dir) => join(dir, name));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
