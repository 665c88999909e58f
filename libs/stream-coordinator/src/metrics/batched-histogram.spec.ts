import fc from 'fast-check';
import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { BatchedHistogram } from './batched-histogram.js';

const BUCKETS = [0.001, 0.005, 0.01, 0.1, 1];

/** The same observations through prom-client's Histogram and through ours, exposed as text. */
async function bothExpositions(
  observations: ReadonlyArray<[string, number]>,
): Promise<[string, string]> {
  const theirs = new Registry();
  const ours = new Registry();
  const reference = new Histogram({
    name: 'h_seconds',
    help: 'handler time',
    labelNames: ['group', 'stream'],
    buckets: BUCKETS,
    registers: [theirs],
  });
  const batched = new BatchedHistogram(
    'h_seconds',
    'handler time',
    ['group', 'stream'],
    BUCKETS,
    ours,
  );
  for (const [stream, value] of observations) {
    reference.observe({ group: 'g', stream }, value);
    batched.observe(batched.seriesFor({ group: 'g', stream }), value);
  }
  return [await theirs.metrics(), await ours.metrics()];
}

describe('BatchedHistogram', () => {
  it('exposes exactly what a prom-client Histogram exposes for the same observations', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(
          fc.tuple(
            fc.constantFrom('orders', 'payments'),
            fc.oneof(fc.constantFrom(...BUCKETS, 0, 2), fc.double({ min: 0, max: 3, noNaN: true })),
          ),
          { maxLength: 60 },
        ),
        async (observations) => {
          const [theirs, ours] = await bothExpositions(observations);
          expect(ours).toBe(theirs);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('is read through the registry as JSON too, and reset zeroes the series it keeps', async () => {
    const registry = new Registry();
    const h = new BatchedHistogram('d', 'help', ['stream'], BUCKETS, registry);
    const series = h.seriesFor({ stream: 's' });
    h.observe(series, 0.004);
    h.observe(series, 5);
    h.observe(series, Number.NaN); // ignored
    const [json] = await registry.getMetricsAsJSON();
    expect(json).toMatchObject({ name: 'd', help: 'help', type: 'histogram', aggregator: 'sum' });
    const count = json?.values.find((v) => (v as { metricName?: string }).metricName === 'd_count');
    expect(count?.value).toBe(2);
    registry.resetMetrics();
    h.observe(series, 0.004);
    expect(await registry.metrics()).toContain('d_count{stream="s"} 1');
    expect(registry.getSingleMetric('d')).toBe(h);
  });

  it('refuses a label set with other labels, naming them', () => {
    const h = new BatchedHistogram('d2', 'help', ['group', 'stream'], BUCKETS, new Registry());
    expect(() => h.seriesFor({ group: 'g' })).toThrow(/has the labels group, stream, not group/);
    expect(() => h.seriesFor({ group: 'g', shard: '1' })).toThrow(TypeError);
  });
});
