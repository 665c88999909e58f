import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CoordinatorApi, CoordinatorProcess, TEST_TOKENS } from '../support/coordinator-process.js';
import { useRedisPrefix } from '../support/redis.js';
import { pollUntil } from '../support/wait.js';

/** One record of the coordinator's JSON log. */
interface LogRecord {
  readonly level: string;
  readonly message: unknown;
  readonly context?: string;
  readonly requestId?: string;
  readonly method?: string;
  readonly url?: string;
  readonly statusCode?: number;
  readonly durationMs?: number;
}

/** Every line of the output, parsed; a line that is not one JSON object fails the test. */
function records(output: string): LogRecord[] {
  return output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      let parsed: unknown;
      try {
        parsed = JSON.parse(line);
      } catch {
        throw new Error(`not a JSON line: ${line}`);
      }
      if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
        throw new Error(`not a JSON object: ${line}`);
      return parsed as LogRecord;
    });
}

// Issue 17 part 6: logs operators can ship — LOG_FORMAT=json, request ids on the access log.
describe('e2e: coordinator LOG_FORMAT=json and request ids', () => {
  const redis = useRedisPrefix('e2e-json-logs');
  let coordinator: CoordinatorProcess;
  let api: CoordinatorApi;

  beforeAll(async () => {
    coordinator = await CoordinatorProcess.start({
      prefix: redis.prefix,
      env: { LOG_FORMAT: 'json', LOG_LEVEL: 'debug', STREAMS: 'orders:2' },
    });
    api = new CoordinatorApi(coordinator.url);
  });
  afterAll(async () => {
    await coordinator?.stop();
  });

  it('one JSON object per line; each access line carries the id the response header returns', async () => {
    // a valid incoming id is kept and echoed
    const kept = await api.request('GET', '/v1/streams/orders', undefined, {
      'x-request-id': 'lb-7f3a.42',
    });
    expect(kept.status).toBe(200);
    expect(kept.headers.get('x-request-id')).toBe('lb-7f3a.42');
    // an invalid one is replaced by a generated id
    const replaced = await api.request('GET', '/v1/streams/orders', undefined, {
      'x-request-id': 'has spaces and "quotes"',
    });
    const generated = replaced.headers.get('x-request-id') ?? '';
    expect(generated).toMatch(/^[0-9a-f-]{36}$/);
    // a request the edge refuses (no token) still gets its id
    const refused = await api.as(null).get('/v1/groups');
    expect(refused.status).toBe(401);
    const refusedId = refused.headers.get('x-request-id') ?? '';
    expect(refusedId).toMatch(/^[0-9a-f-]{36}$/);
    const member = await api.as(TEST_TOKENS.member).get('/v1/streams/orders');
    const memberId = member.headers.get('x-request-id') ?? '';

    const access = await pollUntil(
      () => records(coordinator.output()).filter((r) => r.context === 'HttpAccess'),
      (lines) =>
        [kept, replaced, refused, member].every((res) =>
          lines.some((l) => l.requestId === res.headers.get('x-request-id')),
        ),
      { timeoutMs: 10_000, intervalMs: 50, message: 'the access lines of the four requests' },
    );
    const line = (id: string) => access.find((l) => l.requestId === id);
    expect(line('lb-7f3a.42')).toMatchObject({
      level: 'debug',
      method: 'GET',
      url: '/v1/streams/orders',
      statusCode: 200,
    });
    expect(typeof line('lb-7f3a.42')?.durationMs).toBe('number');
    expect(line(generated)).toMatchObject({ statusCode: 200 });
    expect(line(refusedId)).toMatchObject({ url: '/v1/groups', statusCode: 401 });
    expect(line(memberId)).toMatchObject({ statusCode: 200 });
    // Nest's own start-up lines are JSON records too
    expect(records(coordinator.output()).some((r) => r.context === 'NestApplication')).toBe(true);
  });
});
