import { MEMBER_METRICS } from '@redis-stream-coordinator/nestjs/metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parsePrometheusText, sampleValue } from '../coordinator/support/prometheus-text.js';
import { CoordinatorProcess } from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import { WorkerProcess } from '../support/worker-process.js';
import { pollUntil } from '../support/wait.js';

interface Health {
  status: string;
  details: Record<string, { status: string; reason?: string }>;
}

async function get<T>(url: string): Promise<{ status: number; body: T; type: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  const type = res.headers.get('content-type') ?? '';
  const text = await res.text();
  return { status: res.status, body: (type.includes('json') ? JSON.parse(text) : text) as T, type };
}

describe('the example worker serves /health/live, /health/ready and /metrics', () => {
  const redis = useRedisPrefix('worker-observability');
  let coordinator: CoordinatorProcess;
  let worker: WorkerProcess;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { STREAMS: 'orders:3', HEARTBEAT_INTERVAL_MS: '300', SESSION_TIMEOUT_MS: '10000' },
    });
    worker = await WorkerProcess.start({
      coordinatorUrl: coordinator.url,
      group: 'g-worker-obs',
      env: { MEMBER_ID: 'worker-1', METRICS_SAMPLE_INTERVAL_MS: '200' },
    });
  });
  afterAll(async () => {
    await worker?.stop();
    await coordinator?.stop();
  });

  it('is ready once joined, with every member check up (and /status unchanged)', async () => {
    expect((await get<{ status: string }>(`${worker.url}/health/live`)).body.status).toBe('ok');
    const ready = await pollUntil(
      () => get<Health>(`${worker.url}/health/ready`),
      (r) => r.status === 200,
      { timeoutMs: 20_000, message: 'worker ready' },
    );
    expect(Object.keys(ready.body.details).sort()).toEqual([
      'assignment',
      'coordinator',
      'fencing',
      'readers',
      'redis',
    ]);
    for (const [name, d] of Object.entries(ready.body.details))
      expect({ name, status: d.status }).toEqual({ name, status: 'up' });
    expect((await worker.status()).shards).toEqual([0, 1, 2]);
  });

  it('/metrics is Prometheus text with the member families in the app registry (and its own)', async () => {
    const res = await pollUntil(
      () => get<string>(`${worker.url}/metrics`),
      (r) => parsePrometheusText(r.body).get('stream_coordinator_shard_lag')?.samples.length === 3,
      { timeoutMs: 10_000, intervalMs: 100, message: 'lag sampled for the three shards' },
    );
    expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
    const m = parsePrometheusText(res.body);
    for (const d of Object.values(MEMBER_METRICS))
      expect(m.get(`stream_coordinator_${d.name}`)?.type, d.name).toBe(d.type);
    expect(
      sampleValue(m, 'stream_coordinator_owned_shards', {
        group: 'g-worker-obs',
        stream: 'orders',
      }),
    ).toBe(3);
    // The worker's own registry also carries prom-client's default process metrics.
    expect(m.get('process_cpu_seconds_total')?.type).toBe('counter');
  });

  it('/health/ready turns 503 with a reason when the coordinator stops answering', async () => {
    coordinator.signal('SIGSTOP');
    try {
      const down = await pollUntil(
        () => get<Health & { error: Health['details'] }>(`${worker.url}/health/ready`),
        (r) => r.status === 503,
        { timeoutMs: 20_000, intervalMs: 100, message: 'worker not ready' },
      );
      expect(down.body.error.coordinator?.status).toBe('down');
      expect(down.body.error.coordinator?.reason).toMatch(/heartbeat/);
      expect((await get(`${worker.url}/health/live`)).status).toBe(200);
    } finally {
      coordinator.signal('SIGCONT');
    }
    await pollUntil(
      () => get<Health>(`${worker.url}/health/ready`),
      (r) => r.status === 200,
      { timeoutMs: 30_000, intervalMs: 100, message: 'worker ready again' },
    );
  });
});
