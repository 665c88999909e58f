import { resolve } from 'node:path';
import { TEST_TOKENS } from './coordinator-process.js';
import { freePort } from './free-port.js';
import { defaultRedisUrl, ServiceProcess, repoRoot } from './service-process.js';

/** The built example worker entry point. */
export const WORKER_MAIN = resolve(repoRoot(), 'apps/example-worker/dist/main.js');

/** Options of {@link WorkerProcess.start}. */
export interface WorkerProcessOptions {
  readonly coordinatorUrl: string;
  readonly group: string;
  readonly redisUrl?: string;
  /** Where the worker appends one JSON line per handled message. */
  readonly recordFile?: string;
  /** Extra environment (MEMBER_ID, INSTANCE_ID, HANDLER_DELAY_MS, FAIL_KEY_PREFIX, ...). */
  readonly env?: Readonly<Record<string, string>>;
  /** How long to wait for `/status`. Default 20 s. */
  readonly readyTimeoutMs?: number;
}

/** The example worker (`apps/example-worker`) as a child process, ready once `/status` answers. */
export class WorkerProcess extends ServiceProcess {
  static async start(options: WorkerProcessOptions): Promise<WorkerProcess> {
    const port = await freePort();
    const worker = new WorkerProcess({
      entry: WORKER_MAIN,
      env: {
        ...process.env,
        PORT: String(port),
        COORDINATOR_URL: options.coordinatorUrl,
        COORDINATOR_TOKEN: TEST_TOKENS.member,
        REDIS_URL: options.redisUrl ?? defaultRedisUrl(),
        GROUP: options.group,
        ...(options.recordFile ? { RECORD_FILE: options.recordFile } : {}),
        ...options.env,
      },
      port,
      readyPath: '/status',
      readyTimeoutMs: options.readyTimeoutMs ?? 20_000,
      name: 'worker',
    });
    await worker.launch();
    return worker;
  }

  /** The worker's `/status`. */
  async status(): Promise<{
    memberId: string | null;
    memberEpoch: number;
    phase: string;
    shards: number[];
    handled: number;
  }> {
    const res = await fetch(`${this.url}/status`, { signal: AbortSignal.timeout(2000) });
    return (await res.json()) as {
      memberId: string | null;
      memberEpoch: number;
      phase: string;
      shards: number[];
      handled: number;
    };
  }
}
