import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parsePrometheusText } from '../coordinator/support/prometheus-text.js';
import { evaluate, loadAlertRules } from '../support/alert-rules.js';
import { repoRoot } from '../support/service-process.js';

const SCRAPE = `# HELP rsc_coordinator_shards Shards by status.
# TYPE rsc_coordinator_shards gauge
rsc_coordinator_shards{group="idle",status="assigned"} 0
rsc_coordinator_shards{group="idle",status="unassigned"} 0
rsc_coordinator_shards{group="busy",status="assigned"} 4
rsc_coordinator_shards{group="busy",status="unassigned"} 2
# HELP rsc_coordinator_members_without_assignment Members without shards.
# TYPE rsc_coordinator_members_without_assignment gauge
rsc_coordinator_members_without_assignment{group="idle"} 2
rsc_coordinator_members_without_assignment{group="busy"} 1
`;

// The alerts of docs/operations.md section 9 live in one place, docker/prometheus/alerts.yml.
describe('docker/prometheus/alerts.yml', () => {
  const rules = loadAlertRules();

  it('every rule is in the documented table with the same expression, and the docs point at the file', () => {
    const ops = readFileSync(resolve(repoRoot(), 'docs/operations.md'), 'utf8');
    expect(ops).toContain('docker/prometheus/alerts.yml');
    expect(rules.size).toBeGreaterThan(10);
    for (const rule of rules.values()) {
      // a `|` inside a Markdown table cell is written `\\|`
      expect(ops, rule.alert).toContain(`\`${rule.expr.replaceAll('|', '\\|')}\``);
    }
  });

  it('GroupOwnsNothing and ShardsWithoutOwner select the right groups of a scrape', () => {
    const scrape = parsePrometheusText(SCRAPE);
    const groups = (name: string): string[] =>
      evaluate(rules.get(name)?.expr ?? '', scrape).map((s) => s.labels.group ?? '');
    expect(groups('GroupOwnsNothing')).toEqual(['idle']);
    expect(groups('ShardsWithoutOwner')).toEqual(['busy']);
  });

  it('the evaluator refuses forms it does not implement', () => {
    expect(() =>
      evaluate('avg by (group) (rsc_coordinator_shards) > 0', parsePrometheusText(SCRAPE)),
    ).toThrow(/unsupported/);
  });
});
