/** One sample line of the Prometheus text exposition format. */
export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** A metric family: its `# TYPE`, `# HELP` and samples (histogram/summary series included). */
export interface PromFamily {
  readonly name: string;
  type: string;
  help: string;
  readonly samples: PromSample[];
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

/** A line of the exposition that does not follow the format. */
export class PromParseError extends Error {
  override readonly name = 'PromParseError';

  constructor(lineNo: number, line: string, why: string) {
    super(`line ${lineNo}: ${why}: ${JSON.stringify(line)}`);
  }
}

/**
 * A sample value as Prometheus reads it (Go's `strconv.ParseFloat`: `NaN` and `Inf` in any
 * case, so prom-client's `Nan` for an empty event-loop histogram is valid).
 */
function parseValue(raw: string): number {
  const word = raw.toLowerCase();
  if (word === '+inf' || word === 'inf') return Number.POSITIVE_INFINITY;
  if (word === '-inf') return Number.NEGATIVE_INFINITY;
  if (word === 'nan') return Number.NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(raw)) throw new Error(`bad value ${raw}`);
  return Number(raw);
}

/** Parses `{a="x",b="y\"z"}` starting at `text[0] === '{'`; returns labels and the rest. */
function parseLabels(text: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  for (;;) {
    while (text[i] === ' ') i++;
    if (text[i] === '}') return { labels, rest: text.slice(i + 1) };
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error('label without "="');
    const name = text.slice(i, eq).trim();
    if (!LABEL.test(name)) throw new Error(`bad label name ${name}`);
    if (name in labels) throw new Error(`label ${name} twice`);
    if (text[eq + 1] !== '"') throw new Error('label value not quoted');
    let value = '';
    let j = eq + 2;
    for (; j < text.length && text[j] !== '"'; j++) {
      if (text[j] === '\\') {
        const next = text[++j];
        if (next === 'n') value += '\n';
        else if (next === '\\' || next === '"') value += next;
        else throw new Error(`bad escape \\${next}`);
      } else value += text[j];
    }
    if (text[j] !== '"') throw new Error('unterminated label value');
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
  }
}

/** The family a sample belongs to (`x_bucket`/`x_sum`/`x_count` → `x` for histograms). */
function familyOf(name: string, families: Map<string, PromFamily>): PromFamily | undefined {
  const direct = families.get(name);
  if (direct) return direct;
  for (const suffix of ['_bucket', '_sum', '_count', '_created']) {
    if (!name.endsWith(suffix)) continue;
    const base = families.get(name.slice(0, -suffix.length));
    if (base && (base.type === 'histogram' || base.type === 'summary')) return base;
  }
  return undefined;
}

/**
 * Parses the Prometheus text format (version 0.0.4) strictly: every sample must belong to a
 * family declared by `# TYPE` before it, names and labels must be well-formed, values numeric,
 * and histogram buckets cumulative with a `+Inf` bucket equal to `_count`.
 *
 * @throws PromParseError on the first malformed line or inconsistent histogram.
 */
export function parsePrometheusText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  const lines = text.split('\n');
  lines.forEach((line, index) => {
    const lineNo = index + 1;
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) return; // a plain comment
      const [, kind, name = '', rest = ''] = m;
      if (!NAME.test(name)) throw new PromParseError(lineNo, line, 'bad metric name');
      const family = families.get(name) ?? { name, type: 'untyped', help: '', samples: [] };
      if (kind === 'TYPE') {
        if (!TYPES.has(rest)) throw new PromParseError(lineNo, line, 'unknown type');
        if (family.samples.length > 0) throw new PromParseError(lineNo, line, 'TYPE after samples');
        family.type = rest;
      } else family.help = rest;
      families.set(name, family);
      return;
    }
    const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
    if (!nameMatch) throw new PromParseError(lineNo, line, 'no metric name');
    const name = nameMatch[0];
    let rest = line.slice(name.length);
    let labels: Record<string, string> = {};
    try {
      if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest));
      const parts = rest.trim().split(/\s+/);
      if (parts.length < 1 || parts.length > 2 || parts[0] === '')
        throw new Error('expected "value [timestamp]"');
      const value = parseValue(parts[0] as string);
      const family = familyOf(name, families);
      if (!family) throw new Error(`sample of undeclared family ${name}`);
      family.samples.push({ name, labels, value });
    } catch (error) {
      if (error instanceof PromParseError) throw error;
      throw new PromParseError(
        lineNo,
        line,
        error instanceof Error ? error.message : String(error),
      );
    }
  });
  for (const family of families.values()) if (family.type === 'histogram') checkHistogram(family);
  return families;
}

function checkHistogram(family: PromFamily): void {
  const series = new Map<string, { buckets: Array<[number, number]>; count?: number }>();
  for (const s of family.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(
      Object.entries(rest).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
    );
    const entry = series.get(key) ?? { buckets: [] };
    if (s.name === `${family.name}_bucket`) {
      if (le === undefined) throw new PromParseError(0, s.name, 'bucket without "le"');
      entry.buckets.push([parseValue(le), s.value]);
    } else if (s.name === `${family.name}_count`) entry.count = s.value;
    series.set(key, entry);
  }
  for (const [key, { buckets, count }] of series) {
    const sorted = [...buckets].sort((a, b) => a[0] - b[0]);
    for (let i = 1; i < sorted.length; i++) {
      if ((sorted[i]?.[1] ?? 0) < (sorted[i - 1]?.[1] ?? 0)) {
        throw new PromParseError(0, `${family.name}${key}`, 'histogram buckets are not cumulative');
      }
    }
    const inf = sorted.at(-1);
    if (!inf || inf[0] !== Number.POSITIVE_INFINITY || inf[1] !== count) {
      throw new PromParseError(
        0,
        `${family.name}${key}`,
        'histogram +Inf bucket missing or not equal to _count',
      );
    }
  }
}

/** The value of the one sample of `name` whose labels include `labels`, or undefined. */
export function sampleValue(
  families: Map<string, PromFamily>,
  name: string,
  labels: Readonly<Record<string, string>> = {},
): number | undefined {
  const family = familyOf(name, families);
  const matches = (family?.samples ?? []).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (matches.length > 1)
    throw new Error(`${name} ${JSON.stringify(labels)} matches ${matches.length} samples`);
  return matches[0]?.value;
}
