import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { MemberRuntimeEvents } from '@redis-stream-coordinator/nestjs/internal';
import { WORKER_CONFIG } from '../worker.tokens.js';
import type { WorkerConfig } from '../worker-config.js';

/**
 * Tests (`CRASH_AFTER_COMMITS=n`): SIGKILLs the worker as it learns that the n-th handler call
 * resolved — its transaction committed — before the message is acknowledged.
 */
@Injectable()
export class CommitCrashHook implements OnModuleInit, OnApplicationShutdown {
  private handled = 0;
  private stop: (() => void) | undefined;

  constructor(
    private readonly events: MemberRuntimeEvents,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
  ) {}

  onModuleInit(): void {
    const limit = this.config.crashAfterCommits;
    if (limit <= 0) return;
    this.stop = this.events.onActivity(
      (activity) => {
        if (activity.handled !== undefined && ++this.handled === limit) {
          process.kill(process.pid, 'SIGKILL');
        }
      },
      { handled: true },
    );
  }

  onApplicationShutdown(): void {
    this.stop?.();
  }
}
