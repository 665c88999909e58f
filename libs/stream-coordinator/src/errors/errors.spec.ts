import { readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as health from '../health/index.js';
import * as api from '../index.js';
import * as metrics from '../metrics/index.js';
import * as microservices from '../microservices/index.js';
import * as postgres from '../postgres/index.js';
import * as protocol from '../protocol/index.js';
import * as errors from './index.js';
import { StreamCoordinatorError } from './stream-coordinator.error.js';

const ERRORS_DIR = dirname(fileURLToPath(import.meta.url));
const SRC_DIR = dirname(ERRORS_DIR);
/** The CLI keeps its own errors (it is leaving the library). */
const EXCLUDED_DIRS = new Set([join(SRC_DIR, 'cli')]);

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return EXCLUDED_DIRS.has(path) ? [] : sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

/** Classes an entry point exports that are errors. */
function errorClasses(module: Record<string, unknown>): Array<[string, typeof Error]> {
  return Object.entries(module).filter(
    (entry): entry is [string, typeof Error] =>
      typeof entry[1] === 'function' && entry[1].prototype instanceof Error,
  );
}

const CLASS_DECLARATION = /^(?:export )?(?:abstract )?class (\w+)(?:<[^>]*>)? extends (\w+)/gm;

describe('library errors', () => {
  const exported = errorClasses(errors).filter(([, cls]) => cls !== StreamCoordinatorError);

  it('the errors index exports every library error', () => {
    expect(exported.length).toBeGreaterThanOrEqual(30);
  });

  it.each(exported)('%s extends StreamCoordinatorError', (_, errorClass) => {
    expect(errorClass.prototype).toBeInstanceOf(StreamCoordinatorError);
  });

  it('every error class an entry point exports extends StreamCoordinatorError', () => {
    const entryPoints = [api, protocol, microservices, health, metrics, postgres];
    const strays = entryPoints
      .flatMap((entryPoint) => errorClasses(entryPoint))
      .filter(([, errorClass]) => errorClass !== StreamCoordinatorError)
      .filter(([, errorClass]) => !(errorClass.prototype instanceof StreamCoordinatorError))
      .map(([name]) => name);
    expect(strays).toEqual([]);
  });

  it('every error class is declared in a file of its own under errors/, exported by its index', () => {
    const misplaced: string[] = [];
    for (const file of sourceFiles(SRC_DIR)) {
      const text = readFileSync(file, 'utf8');
      const classes = [...text.matchAll(CLASS_DECLARATION)].filter(([, , parent]) =>
        parent!.endsWith('Error'),
      );
      const where = relative(SRC_DIR, file);
      if (file.startsWith(ERRORS_DIR)) {
        if (classes.length > 1) misplaced.push(`${where} declares ${classes.length} errors`);
      } else {
        for (const [, name] of classes) misplaced.push(`${name} in ${where}`);
      }
      for (const [, name, parent] of classes) {
        if (name === 'StreamCoordinatorError') continue;
        if (parent === 'Error') misplaced.push(`${name} extends Error`);
        if (!(name! in errors)) misplaced.push(`${name} is not exported by errors/index.ts`);
        if (!text.includes(`name = '${name}'`)) misplaced.push(`${name} has another name`);
      }
    }
    expect(misplaced).toEqual([]);
  });

  it('every file under errors/ is named after the error it declares', () => {
    const strays = sourceFiles(ERRORS_DIR)
      .filter((file) => basename(file) !== 'index.ts')
      .filter((file) => {
        const name = /^export class (\w+)/m.exec(readFileSync(file, 'utf8'))?.[1] ?? '';
        const expected = name
          .replace(/Error$/, '')
          .replace(/([a-z0-9])([A-Z])/g, '$1-$2')
          .toLowerCase();
        return basename(file) !== `${expected}.error.ts`;
      })
      .map((file) => relative(SRC_DIR, file));
    expect(strays).toEqual([]);
  });
});
