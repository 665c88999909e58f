import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onProcessExit } from './process-cleanup.js';

/** A temporary directory that is removed by `remove()` or, failing that, at process exit. */
export interface TempDir {
  /** Absolute path. */
  readonly path: string;
  /** Removes it (recursively; idempotent). */
  remove(): void;
}

/** Creates a fresh directory under the OS temp dir named `rsc-<label>-XXXXXX`. */
export function createTempDir(label: string): TempDir {
  const path = mkdtempSync(join(tmpdir(), `rsc-${label}-`));
  const remove = (): void => {
    unregister();
    rmSync(path, { recursive: true, force: true });
  };
  const unregister = onProcessExit(remove);
  return { path, remove };
}
