import { resolve } from 'node:path';
import { TEST_TOKENS } from '../../support/coordinator-process.js';
import { freePort } from '../../support/free-port.js';
import { defaultRedisUrl, repoRoot, ServiceProcess } from '../../support/service-process.js';

/** The built example producer entry point. */
export const PRODUCER_MAIN = resolve(repoRoot(), 'apps/example-producer/dist/main.js');

/** Options of {@link ProducerProcess.start}. */
export interface ProducerProcessOptions {
  readonly coordinatorUrl: string;
  readonly redisUrl?: string;
  /** Extra environment (STREAM, KEY_COUNT, RATE, MAX_MESSAGES, BATCH_SIZE, ...). */
  readonly env?: Readonly<Record<string, string>>;
}

/** What the producer's `GET /status` reports. */
export interface ProducerStatus {
  readonly stream: string;
  readonly published: number;
  readonly waiting: number;
  readonly errors: number;
  readonly lastError: string | null;
  readonly done: boolean;
  /** Messages generated per key: `key → count` (seq 0 … count-1). */
  readonly sent: Record<string, number>;
}

/** The example producer (`apps/example-producer`) as a child process, ready once `/health/live` answers. */
export class ProducerProcess extends ServiceProcess {
  /** Starts a producer and waits until it serves HTTP. */
  static async start(options: ProducerProcessOptions): Promise<ProducerProcess> {
    const port = await freePort();
    const producer = new ProducerProcess({
      entry: PRODUCER_MAIN,
      env: {
        ...process.env,
        PORT: String(port),
        COORDINATOR_URL: options.coordinatorUrl,
        COORDINATOR_TOKEN: TEST_TOKENS.member,
        REDIS_URL: options.redisUrl ?? defaultRedisUrl(),
        ...options.env,
      },
      port,
      readyPath: '/health/live',
      readyTimeoutMs: 20_000,
      name: 'producer',
    });
    await producer.launch();
    return producer;
  }

  /** The producer's `/status`. */
  async status(): Promise<ProducerStatus> {
    const res = await fetch(`${this.url}/status`, { signal: AbortSignal.timeout(2000) });
    return (await res.json()) as ProducerStatus;
  }
}
