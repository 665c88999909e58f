import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * The library's public surface is what its public entry points (package.json `exports` minus
 * `/internal`) export, and exactly those declarations carry the custom TSDoc tag `@publicApi`
 * (defined in libs/stream-coordinator/tsdoc.json). A new export without the tag, or a tag left on
 * a declaration that is no longer exported, fails here; api/*.api.md (API Extractor,
 * `npm run api:check`) then shows the surface itself for review.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LIBRARY = join(ROOT, 'libs/stream-coordinator');
const SRC = join(LIBRARY, 'src');
const TAG = 'publicApi';
/** Entry points without a compatibility promise: no tag on what only they export. */
const NOT_PUBLIC = new Set(['./internal', './package.json']);

interface ExportTarget {
  types: string;
}

/** Source file of every public entry point, from package.json `exports`. */
function publicEntryPoints(): Map<string, string> {
  const manifest = JSON.parse(readFileSync(join(LIBRARY, 'package.json'), 'utf8')) as {
    exports: Record<string, ExportTarget | string>;
  };
  const entries = new Map<string, string>();
  for (const [subpath, target] of Object.entries(manifest.exports)) {
    if (NOT_PUBLIC.has(subpath) || typeof target === 'string') continue;
    const source = target.types.replace(/^\.\/dist\//, 'src/').replace(/\.d\.ts$/, '.ts');
    entries.set(subpath, join(LIBRARY, source));
  }
  return entries;
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.spec.ts') ? [path] : [];
  });
}

function hasTag(declaration: ts.Node): boolean {
  return ts.getJSDocTags(declaration).some((tag) => tag.tagName.text === TAG);
}

/** `file:line name` of a declaration, for messages. */
function where(declaration: ts.Declaration, name: string): string {
  const file = declaration.getSourceFile();
  const { line } = file.getLineAndCharacterOfPosition(declaration.getStart());
  return `${relative(LIBRARY, file.fileName)}:${line + 1} ${name}`;
}

function analyse() {
  const entries = publicEntryPoints();
  const files = sourceFiles(SRC);
  const program = ts.createProgram(files, {
    module: ts.ModuleKind.NodeNext,
    moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2023,
    experimentalDecorators: true,
    skipLibCheck: true,
    noEmit: true,
    types: [],
  });
  const checker = program.getTypeChecker();
  const resolve = (symbol: ts.Symbol): ts.Symbol =>
    symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;

  // Every declaration a public entry point exports, with the entry points that export it.
  const publicSymbols = new Map<ts.Symbol, string[]>();
  const untagged: string[] = [];
  for (const [subpath, file] of entries) {
    const source = program.getSourceFile(file);
    if (!source) throw new Error(`${file} (entry point ${subpath}) is not in the program`);
    const moduleSymbol = checker.getSymbolAtLocation(source);
    if (!moduleSymbol) throw new Error(`${file} has no exports`);
    for (const exported of checker.getExportsOfModule(moduleSymbol)) {
      const symbol = resolve(exported);
      publicSymbols.set(symbol, [...(publicSymbols.get(symbol) ?? []), subpath]);
      const declarations = symbol.declarations ?? [];
      if (!declarations.some(hasTag)) {
        untagged.push(
          `${subpath}: ${declarations[0] ? where(declarations[0], exported.name) : exported.name}`,
        );
      }
    }
  }

  // Every declaration that carries the tag, and whether a public entry point exports it.
  const strayTags: string[] = [];
  let tagged = 0;
  const visit = (node: ts.Node): void => {
    if (hasTag(node)) {
      tagged += 1;
      const named = node as ts.Node & { name?: ts.Node };
      const symbol = named.name ? checker.getSymbolAtLocation(named.name) : undefined;
      const name = named.name?.getText() ?? ts.SyntaxKind[node.kind];
      if (!symbol || !publicSymbols.has(resolve(symbol))) {
        strayTags.push(where(node as ts.Declaration, name));
      }
    }
    ts.forEachChild(node, visit);
  };
  let written = 0;
  for (const file of files) {
    const source = program.getSourceFile(file)!;
    written += source.text.match(new RegExp(`@${TAG}\\b`, 'g'))?.length ?? 0;
    ts.forEachChild(source, (node) => {
      // `export const X = …` carries its doc comment on the statement
      if (ts.isVariableStatement(node) && hasTag(node)) {
        tagged += 1;
        for (const declaration of node.declarationList.declarations) {
          const symbol = checker.getSymbolAtLocation(declaration.name);
          if (!symbol || !publicSymbols.has(symbol)) {
            strayTags.push(where(declaration, declaration.name.getText()));
          }
        }
        return;
      }
      visit(node);
    });
  }
  return { entries, publicSymbols, untagged, strayTags, tagged, written };
}

describe('the @publicApi tag marks exactly the public surface of the library', () => {
  const result = analyse();

  it('reads every public entry point of package.json', () => {
    expect([...result.entries.keys()]).toEqual(
      expect.arrayContaining(['.', './protocol', './microservices', './health', './metrics']),
    );
    expect(result.publicSymbols.size).toBeGreaterThan(50);
  });

  it('every name a public entry point exports carries @publicApi', () => {
    expect(result.untagged, `add @publicApi:\n${result.untagged.join('\n')}\n`).toEqual([]);
  });

  it('no declaration outside the public surface carries @publicApi', () => {
    expect(result.strayTags, `remove @publicApi:\n${result.strayTags.join('\n')}\n`).toEqual([]);
  });

  it('every @publicApi written in the sources sits on a declaration', () => {
    expect(result.tagged).toBe(result.written);
  });
});
