import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { parse } from 'yaml';
import type { PromFamily } from '../coordinator/support/prometheus-text.js';
import { repoRoot } from './service-process.js';

/** One alerting rule of a Prometheus rules file. */
export interface AlertRule {
  readonly alert: string;
  readonly expr: string;
  readonly for?: string;
}

/** The alerting rules shipped in `docker/prometheus/alerts.yml`, by name. */
export function loadAlertRules(
  path = resolve(repoRoot(), 'docker/prometheus/alerts.yml'),
): Map<string, AlertRule> {
  const doc = parse(readFileSync(path, 'utf8')) as { groups: Array<{ rules: AlertRule[] }> };
  const rules = new Map<string, AlertRule>();
  for (const group of doc.groups) for (const rule of group.rules) rules.set(rule.alert, rule);
  return rules;
}

/** A series of an instant vector: its labels and value. */
export interface Series {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

type Matcher = { label: string; op: '=' | '!=' | '=~' | '!~'; value: string };

/**
 * Evaluates an instant-vector PromQL expression against one scrape, for exactly the forms the
 * shipped rules without range functions use: `<agg> by (<labels>) (<metric>{<matchers>})` with
 * `max`, `min` or `sum`; a comparison with a number (`> 0`, `== 0`: a filter, as in Prometheus);
 * `<a> and on (<labels>) <b>`; parentheses. Anything else throws, so a rule the test claims to
 * check is never silently misread. The alert is active for each series the result holds.
 */
export function evaluate(expr: string, families: Map<string, PromFamily>): Series[] {
  const tokens = expr.match(
    /"(?:[^"\\]|\\.)*"|=~|!~|!=|==|>=|<=|[(){},<>=]|[A-Za-z_:][\w:]*|[\d.]+/g,
  );
  if (!tokens || tokens.join('').replace(/\s/g, '') !== expr.replace(/\s/g, ''))
    throw new Error(`cannot tokenise ${expr}`);
  let i = 0;
  const peek = (): string | undefined => tokens[i];
  const next = (): string => {
    const t = tokens[i++];
    if (t === undefined) throw new Error(`unexpected end of ${expr}`);
    return t;
  };
  const expect = (t: string): void => {
    const got = next();
    if (got !== t) throw new Error(`expected ${t}, got ${got} in ${expr}`);
  };
  const labelList = (): string[] => {
    expect('(');
    const labels: string[] = [];
    while (peek() !== ')') {
      labels.push(next());
      if (peek() === ',') next();
    }
    expect(')');
    return labels;
  };
  const selector = (): Series[] => {
    const name = next();
    const matchers: Matcher[] = [];
    if (peek() === '{') {
      next();
      while (peek() !== '}') {
        const label = next();
        const op = next() as Matcher['op'];
        if (!['=', '!=', '=~', '!~'].includes(op)) throw new Error(`bad matcher op ${op}`);
        matchers.push({ label, op, value: JSON.parse(next()) as string });
        if (peek() === ',') next();
      }
      next();
    }
    const family = families.get(name);
    return (family?.samples ?? [])
      .filter((s) => s.name === name)
      .filter((s) =>
        matchers.every((m) => {
          const v = s.labels[m.label] ?? '';
          if (m.op === '=') return v === m.value;
          if (m.op === '!=') return v !== m.value;
          const match = new RegExp(`^(?:${m.value})$`).test(v);
          return m.op === '=~' ? match : !match;
        }),
      )
      .map((s) => ({ labels: { ...s.labels }, value: s.value }));
  };
  const primary = (): Series[] => {
    const t = peek();
    if (t === '(') {
      next();
      const inner = andExpr();
      expect(')');
      return inner;
    }
    if (t === 'max' || t === 'min' || t === 'sum') {
      next();
      expect('by');
      const by = labelList();
      expect('(');
      const input = selector();
      expect(')');
      const groups = new Map<string, Series>();
      for (const s of input) {
        const labels = Object.fromEntries(by.map((l) => [l, s.labels[l] ?? '']));
        const key = JSON.stringify(labels);
        const prev = groups.get(key);
        const value =
          prev === undefined
            ? s.value
            : t === 'max'
              ? Math.max(prev.value, s.value)
              : t === 'min'
                ? Math.min(prev.value, s.value)
                : prev.value + s.value;
        groups.set(key, { labels, value });
      }
      return [...groups.values()];
    }
    throw new Error(`unsupported PromQL at ${t ?? 'end'} in ${expr}`);
  };
  const comparison = (): Series[] => {
    const left = primary();
    const op = peek();
    if (op === '>' || op === '<' || op === '==' || op === '!=' || op === '>=' || op === '<=') {
      next();
      const n = Number(next());
      const keep = (v: number): boolean =>
        op === '>'
          ? v > n
          : op === '<'
            ? v < n
            : op === '=='
              ? v === n
              : op === '!='
                ? v !== n
                : op === '>='
                  ? v >= n
                  : v <= n;
      return left.filter((s) => keep(s.value));
    }
    return left;
  };
  const andExpr = (): Series[] => {
    let left = comparison();
    while (peek() === 'and') {
      next();
      expect('on');
      const on = labelList();
      const right = comparison();
      const keyOf = (s: Series): string => JSON.stringify(on.map((l) => s.labels[l] ?? ''));
      const keys = new Set(right.map(keyOf));
      left = left.filter((s) => keys.has(keyOf(s)));
    }
    return left;
  };
  const result = andExpr();
  if (i !== tokens.length) throw new Error(`unparsed rest ${tokens.slice(i).join(' ')} in ${expr}`);
  return result;
}
