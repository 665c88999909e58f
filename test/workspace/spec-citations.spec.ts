import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * docs/protocol.md is the specification the repository cites by section. This keeps every
 * citation resolvable: a section sign in a source file, doc or deployment file must be part of a
 * citation of docs/protocol.md naming a section that exists, and nothing may cite the original
 * contract (PROTOCOL, outside the repository) any more. Its table in docs/protocol.md Appendix A
 * says where each of its sections went.
 */

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SPEC = 'docs/protocol.md';
const SECTION = '\u00a7';
const NUMBER = String.raw`\d+(?:\.\d+)*`;
/** `docs/protocol.md §4.4`, also with the file name in backticks and with more sections after. */
const CITATION = new RegExp(
  String.raw`\`?docs/protocol\.md\`? ${SECTION}(${NUMBER})` +
    String.raw`((?:(?:, | and | or |–|-)${SECTION}${NUMBER})*)`,
  'g',
);
const SECTION_REF = new RegExp(`${SECTION}(${NUMBER})`, 'g');
/** The original contract's file name, or its name followed by a section sign. */
const ORIGINAL_CONTRACT = new RegExp(String.raw`PROTOCOL\.md|PROTOCOL ${SECTION}`);

const SCANNED_DIRS = ['apps', 'libs', 'test', 'bench', 'scripts', 'docs', 'docker', '.ci'];
const SCANNED_ROOT_FILES = ['README.md', 'vitest.config.ts', 'package.json'];
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage', '.tools', '.tmp']);
const TEXT_FILE = /\.(?:ts|mts|js|mjs|cjs|md|ya?ml|json|lua|sh)$|^run$/;

function scannedFiles(): string[] {
  const files = SCANNED_ROOT_FILES.map((f) => join(ROOT, f));
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(path);
      } else if (TEXT_FILE.test(entry.name)) {
        files.push(path);
      }
    }
  };
  for (const dir of SCANNED_DIRS) walk(join(ROOT, dir));
  return files.filter((f) => relative(ROOT, f) !== relative(ROOT, fileURLToPath(import.meta.url)));
}

/** The numbered headings of the spec (`## 4. Group protocol rules`, `### 4.4 Fencing`). */
function specHeadings(text: string): string[] {
  const numbers: string[] = [];
  for (const line of text.split('\n')) {
    const heading = /^(#{2,3}) (\d+(?:\.\d+)?)\.? /.exec(line);
    if (heading) numbers.push(heading[2] as string);
  }
  return numbers;
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

describe('docs/protocol.md citations', () => {
  const specText = readFileSync(join(ROOT, SPEC), 'utf8');
  const sections = new Set(specHeadings(specText));

  it('numbers its sections 1, 1.1, 1.2, 2, … in order', () => {
    const numbers = specHeadings(specText);
    expect(numbers.length).toBeGreaterThan(10);
    let top = 0;
    let sub = 0;
    for (const n of numbers) {
      const [major, minor] = n.split('.').map(Number) as [number, number | undefined];
      if (minor === undefined) {
        expect(major, `section ${n} after ${top}`).toBe(top + 1);
        top = major;
        sub = 0;
      } else {
        expect(`${major}.${minor}`, `section ${n} after ${top}.${sub}`).toBe(`${top}.${sub + 1}`);
        sub = minor;
      }
    }
    // Every `##` heading but the appendix is numbered.
    const unnumbered = specText
      .split('\n')
      .filter((l) => /^#{2,3} /.test(l) && !/^#{2,3} \d/.test(l) && !l.startsWith('## Appendix'));
    expect(unnumbered).toEqual([]);
  });

  it('refers within docs/protocol.md only to sections it has', () => {
    const missing: string[] = [];
    for (const match of specText.matchAll(SECTION_REF)) {
      if (!sections.has(match[1] as string)) {
        missing.push(`${SPEC}:${lineOf(specText, match.index)}: ${SECTION}${match[1]}`);
      }
    }
    expect(missing).toEqual([]);
    expect(specText).not.toMatch(new RegExp(`PROTOCOL\\.md ${SECTION}`));
  });

  it('is the only spec the repository cites, by sections it has', () => {
    const problems: string[] = [];
    for (const file of scannedFiles()) {
      const name = relative(ROOT, file).split('\\').join('/');
      if (name === SPEC) continue;
      const text = readFileSync(file, 'utf8');
      const original = ORIGINAL_CONTRACT.exec(text);
      if (original) {
        problems.push(`${name}:${lineOf(text, original.index)}: cites the original contract`);
      }
      // Check every citation, then blank it out: a section sign left over is cited from nowhere.
      const rest = text.replace(CITATION, (citation: string, ...args: unknown[]) => {
        const at = args.at(-2) as number;
        for (const ref of citation.matchAll(SECTION_REF)) {
          if (!sections.has(ref[1] as string)) {
            problems.push(`${name}:${lineOf(text, at)}: no section ${SECTION}${ref[1]} in ${SPEC}`);
          }
        }
        return ' '.repeat(citation.length);
      });
      for (const stray of rest.matchAll(new RegExp(SECTION, 'g'))) {
        problems.push(
          `${name}:${lineOf(text, stray.index)}: a section sign that is not a citation of ` +
            `"${SPEC} ${SECTION}<n>" (on one line)`,
        );
      }
    }
    expect(problems).toEqual([]);
  });
});
