import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/**
 * libs/stream-coordinator/README.md is the package's page on npm: it must stand alone (every link
 * absolute, to the one repository), and its configuration tables must list every module and
 * handler option, so a new option cannot ship undocumented.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const LIBRARY = join(ROOT, 'libs/stream-coordinator');
const REPOSITORY = 'https://github.com/redis-stream-coordinator/redis-stream-coordinator';
const README = readFileSync(join(LIBRARY, 'README.md'), 'utf8');

/** Property names of the interfaces `names` declared in `file` (under libs/stream-coordinator/src). */
function properties(file: string, ...names: string[]): string[] {
  const path = join(LIBRARY, 'src', file);
  const source = ts.createSourceFile(path, readFileSync(path, 'utf8'), ts.ScriptTarget.ES2023);
  const found = source.statements.filter(
    (s): s is ts.InterfaceDeclaration =>
      ts.isInterfaceDeclaration(s) && names.includes(s.name.text),
  );
  expect(found.map((i) => i.name.text).sort()).toEqual([...names].sort());
  return found.flatMap((i) => i.members.map((m) => m.name!.getText(source)));
}

/** Options named in the first column of the table under the heading `heading`. */
function tableOptions(heading: string): string[] {
  const start = README.indexOf(`\n${heading}\n`);
  expect(start, `README.md has no heading "${heading}"`).toBeGreaterThan(0);
  const rest = README.slice(start + heading.length + 2);
  const section = rest.slice(0, rest.search(/\n#{1,3} /));
  return [...section.matchAll(/^\| *`([A-Za-z]+)`/gm)].map(([, name]) => name!);
}

describe('the package README (the npm page)', () => {
  it('lists every module option in its module options table', () => {
    const options = properties(
      'interfaces/stream-coordinator-options.interface.ts',
      'StreamCoordinatorModuleOptions',
      'StreamCoordinatorModuleExtras',
    );
    const documented = tableOptions('### Module options');
    expect(options.filter((o) => !documented.includes(o))).toEqual([]);
    expect(documented.filter((o) => !options.includes(o))).toEqual([]);
  });

  it('lists every handler option in its handler options table', () => {
    const options = properties(
      'interfaces/stream-shard-handler-options.interface.ts',
      'StreamShardHandlerOptions',
    );
    const documented = tableOptions('### Handler options');
    expect(options.filter((o) => !documented.includes(o))).toEqual([]);
    expect(documented.filter((o) => !options.includes(o))).toEqual([]);
  });

  it('gives every peer dependency the range package.json declares', () => {
    const pkg = JSON.parse(readFileSync(join(LIBRARY, 'package.json'), 'utf8')) as {
      peerDependencies: Record<string, string>;
    };
    const rows = new Map(
      [...README.matchAll(/^\| `(@?[a-z][\w./-]*)` +\| `([^`]+)` +\|/gm)].map(([, name, range]) => [
        name!,
        // A `|` inside a table cell is written `\|`.
        range!.replaceAll('\\|', '|'),
      ]),
    );
    for (const [name, range] of Object.entries(pkg.peerDependencies))
      expect(rows.get(name), `the peer dependency table's row for ${name}`).toBe(range);
  });

  it('links only absolutely, to the repository of package.json', () => {
    const links = [...README.matchAll(/\]\(([^)\s]+)\)|<(https?:[^>\s]+)>/g)].map(
      ([, markdown, bare]) => (markdown ?? bare)!,
    );
    expect(links.length).toBeGreaterThan(10);
    const relative = links.filter((l) => !l.startsWith('https://') && !l.startsWith('#'));
    expect(relative).toEqual([]);
    const github = links.filter((l) => l.startsWith('https://github.com/'));
    expect(github.filter((l) => !l.startsWith(REPOSITORY))).toEqual([]);
  });

  it('package.json points repository, homepage and bugs at that repository', () => {
    const manifest = JSON.parse(readFileSync(join(LIBRARY, 'package.json'), 'utf8')) as {
      repository: { url: string };
      homepage: string;
      bugs: { url: string };
      publishConfig: { access: string };
      license: string;
    };
    expect(manifest.repository.url).toBe(`git+${REPOSITORY}.git`);
    expect(manifest.homepage.startsWith(REPOSITORY)).toBe(true);
    expect(manifest.bugs.url).toBe(`${REPOSITORY}/issues`);
    expect(manifest.publishConfig.access).toBe('public');
    expect(manifest.license).toBe('MIT');
  });
});
