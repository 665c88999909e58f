import type { Histogram, Registry } from 'prom-client';

/** The observations of one label set: count per bucket (not cumulative), sum, count. */
export interface HistogramSeries {
  readonly labels: Readonly<Record<string, string>>;
  /** One slot per upper bound, plus the last one for values above every bound. */
  readonly counts: Float64Array;
  sum: number;
  count: number;
}

/** One sample of the exposition, as a prom-client registry reads it from `get()`. */
interface HistogramSample {
  readonly value: number;
  readonly labels: Record<string, string | number>;
  readonly metricName: string;
}

/**
 * A Prometheus histogram for a per-message path. prom-client's `Histogram.observe` hashes and
 * validates the label object on every call (≈ 260 ns, a few percent of a member's CPU per message
 * at batch 100); here the caller keeps the {@link HistogramSeries} of its label set (looked up
 * once per shard) and {@link observe} is one bucket search and three additions. The registry
 * reads the series when it is scraped, through the same `get()`/`reset()` a prom-client metric
 * has, so the exposition is that of a prom-client histogram (`_bucket` with `le`, cumulative,
 * `+Inf`, `_sum`, `_count`).
 *
 * @internal
 */
export class BatchedHistogram {
  readonly type = 'histogram';
  readonly aggregator = 'sum';
  private readonly upperBounds: readonly number[];
  private readonly series = new Map<string, HistogramSeries>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly string[],
    buckets: readonly number[],
    registry: Registry,
  ) {
    this.upperBounds = [...buckets].sort((a, b) => a - b);
    // the registry reads metrics through get() and reset(); it has no type for other shapes
    registry.registerMetric(this as unknown as Histogram);
  }

  /**
   * The series of `labels` (created empty on first use; keep it and pass it to {@link observe}).
   *
   * @throws TypeError when `labels` names other labels than the histogram's.
   */
  seriesFor(labels: Readonly<Record<string, string>>): HistogramSeries {
    const names = Object.keys(labels);
    if (
      names.length !== this.labelNames.length ||
      !names.every((n) => this.labelNames.includes(n))
    ) {
      throw new TypeError(
        `histogram ${this.name} has the labels ${this.labelNames.join(', ')}, not ${names.join(', ')}`,
      );
    }
    const id = this.labelNames.map((n) => labels[n]).join('\u0000');
    let series = this.series.get(id);
    if (series === undefined) {
      series = {
        labels: { ...labels },
        counts: new Float64Array(this.upperBounds.length + 1),
        sum: 0,
        count: 0,
      };
      this.series.set(id, series);
    }
    return series;
  }

  /** Records `value` in `series` (values that are not finite numbers are ignored). */
  observe(series: HistogramSeries, value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.upperBounds;
    let i = 0;
    while (i < bounds.length && value > (bounds[i] as number)) i++;
    series.counts[i] = (series.counts[i] as number) + 1;
    series.sum += value;
    series.count++;
  }

  /** The exposition of every series (what a prom-client registry reads when it is scraped). */
  get(): Promise<{
    name: string;
    help: string;
    type: 'histogram';
    aggregator: 'sum';
    values: HistogramSample[];
  }> {
    const values: HistogramSample[] = [];
    const bucket = `${this.name}_bucket`;
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.upperBounds.length; i++) {
        cumulative += s.counts[i] as number;
        values.push({
          value: cumulative,
          labels: { le: this.upperBounds[i] as number, ...s.labels },
          metricName: bucket,
        });
      }
      values.push({ value: s.count, labels: { le: '+Inf', ...s.labels }, metricName: bucket });
      values.push({ value: s.sum, labels: { ...s.labels }, metricName: `${this.name}_sum` });
      values.push({ value: s.count, labels: { ...s.labels }, metricName: `${this.name}_count` });
    }
    return Promise.resolve({
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values,
    });
  }

  /** Zeroes every series (`registry.resetMetrics()`); series kept by callers stay valid. */
  reset(): void {
    for (const s of this.series.values()) {
      s.counts.fill(0);
      s.sum = 0;
      s.count = 0;
    }
  }
}
