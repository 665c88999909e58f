/** Summary statistics over a sample of numbers (benchmarks only: no assertions). */

/** The `q`-quantile (0…1) of `values` by nearest rank; `NaN` when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank] as number;
}

/** The median of `values` (mean of the two middle values for an even count); `NaN` when empty. */
export function median(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/** p50/p99/max of a latency sample, in the sample's unit. */
export interface LatencySummary {
  readonly count: number;
  readonly p50: number;
  readonly p99: number;
  readonly max: number;
}

/** Summarises a latency sample (sorts once). */
export function summarize(values: readonly number[]): LatencySummary {
  if (values.length === 0) return { count: 0, p50: Number.NaN, p99: Number.NaN, max: Number.NaN };
  const sorted = Float64Array.from(values).sort();
  const at = (q: number): number =>
    sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))] as number;
  return {
    count: sorted.length,
    p50: at(0.5),
    p99: at(0.99),
    max: sorted[sorted.length - 1] as number,
  };
}

/** `a / b`, or `NaN` when either is not a finite number or `b` is 0. */
export function ratio(a: number, b: number): number {
  return Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? a / b : Number.NaN;
}

/** Rounds for reports: 3 significant digits below 100, integers above. */
export function round(value: number): number {
  if (!Number.isFinite(value)) return value;
  const abs = Math.abs(value);
  if (abs >= 100) return Math.round(value);
  if (abs >= 10) return Math.round(value * 10) / 10;
  if (abs >= 1) return Math.round(value * 100) / 100;
  return Math.round(value * 1000) / 1000;
}

/** Wall-clock time in ms with sub-ms precision, comparable across local processes. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** A benchmark step did not reach its condition in time. */
export class BenchTimeoutError extends Error {
  override readonly name = 'BenchTimeoutError';

  constructor(what: string, timeoutMs: number) {
    super(`benchmark: timed out after ${timeoutMs} ms waiting for ${what}`);
  }
}

/** CPU time (user + system) this process used so far, in µs. */
export function cpuUs(): number {
  const u = process.cpuUsage();
  return u.user + u.system;
}
