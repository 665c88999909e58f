import { readFileSync, readdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { isLoopbackHost, tokenProblems } from './token-rules.js';

const none = {
  COORDINATOR_TOKEN: [],
  COORDINATOR_ADMIN_TOKEN: [],
  COORDINATOR_VIEWER_TOKEN: [],
  METRICS_TOKEN: [],
};

/** Files that show example token values to operators. */
function exampleFiles(): string[] {
  const root = resolve(import.meta.dirname, '../../../..');
  const walk = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? walk(join(dir, e.name)) : [join(dir, e.name)],
    );
  return [
    join(root, 'README.md'),
    ...walk(join(root, 'docs')).filter((f) => f.endsWith('.md')),
    ...walk(join(root, 'docker')),
  ];
}

describe('token rules', () => {
  it('refuses short tokens and shipped placeholders, naming the variable, never echoing the token', () => {
    const problems = tokenProblems({
      ...none,
      COORDINATOR_TOKEN: ['0123456789abcdef', 'short'],
      COORDINATOR_ADMIN_TOKEN: ['dev-admin-token'],
      METRICS_TOKEN: ['Replace-Me-Metrics-Token-Please'],
    });
    expect(problems.map((p) => p.variable)).toEqual([
      'COORDINATOR_TOKEN',
      'COORDINATOR_ADMIN_TOKEN',
      'METRICS_TOKEN',
    ]);
    expect(problems[0]?.message).toContain('COORDINATOR_TOKEN (token 2) is 5 characters');
    expect(problems[1]?.message).toContain('placeholder');
    for (const p of problems) expect(p.message).not.toMatch(/short|dev-admin-token|Replace-Me/);
    expect(tokenProblems({ ...none, COORDINATOR_TOKEN: ['a'.repeat(16)] })).toEqual([]);
  });

  it('refuses a token given to two roles: the weaker role would get the stronger rights', () => {
    const shared = 'one-token-for-everything-0123';
    const problems = tokenProblems({
      ...none,
      COORDINATOR_TOKEN: [shared],
      COORDINATOR_ADMIN_TOKEN: ['an-admin-token-0123456789'],
      COORDINATOR_VIEWER_TOKEN: [shared],
      METRICS_TOKEN: ['an-admin-token-0123456789'],
    });
    expect(problems.map((p) => [p.variable, p.message])).toEqual([
      [
        'COORDINATOR_VIEWER_TOKEN',
        'COORDINATOR_VIEWER_TOKEN repeats a token of COORDINATOR_TOKEN: whoever holds it gets the stronger role of the two; give each role its own token',
      ],
      [
        'METRICS_TOKEN',
        'METRICS_TOKEN repeats a token of COORDINATOR_ADMIN_TOKEN: whoever holds it gets the stronger role of the two; give each role its own token',
      ],
    ]);
    // the same token twice in one variable is harmless
    expect(tokenProblems({ ...none, COORDINATOR_TOKEN: [shared, shared] })).toEqual([]);
  });

  it('refuses every example token value shipped in README, docs and docker/', () => {
    const shipped = new Set<string>();
    for (const file of exampleFiles()) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(
        /\b(?:replace-me[\w-]*|dev-[\w-]*token|member-secret|admin-secret)\b/g,
      ))
        shipped.add(m[0]);
    }
    expect(shipped.size).toBeGreaterThan(0);
    for (const token of shipped) {
      expect(tokenProblems({ ...none, COORDINATOR_TOKEN: [token] }), token).toHaveLength(1);
    }
  });

  it('knows loopback hosts', () => {
    for (const h of ['127.0.0.1', '127.1.2.3', 'localhost', '::1', '[::1]'])
      expect(isLoopbackHost(h)).toBe(true);
    for (const h of ['0.0.0.0', '::', '10.0.0.1', 'example.com', ''])
      expect(isLoopbackHost(h)).toBe(false);
  });
});
