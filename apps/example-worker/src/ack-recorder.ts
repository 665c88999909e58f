import { Inject, Injectable, type OnApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { MemberRuntimeEvents } from '@redis-stream-coordinator/nestjs/internal';
import { HandledRecorder } from './handled-recorder.js';
import { preciseNow, wallClockOf } from './record-clock.js';
import { WORKER_CONFIG } from './worker.tokens.js';
import type { WorkerConfig } from './worker-config.js';

/**
 * Records every ack batch Redis accepted to `RECORD_FILE` (one `{"a": [ids], "m", "s", "t", "t0",
 * "st"}` line per fenced ack), from the readers' `acked` activity, so the tests' invariant checker
 * knows which entries were acknowledged, by whom and when. Does nothing without `RECORD_FILE`.
 *
 * With `CRASH_AFTER_ACKS=n` (tests) the process SIGKILLs itself when it learns of the n-th
 * accepted batch, before recording it: Redis applied that ack, and its record is lost in the
 * crash, as when a member is killed while an ack's answer is on its way.
 */
@Injectable()
export class AckRecorder implements OnModuleInit, OnApplicationShutdown {
  private memberId = '';
  private acks = 0;
  private readonly unsubscribe: Array<() => void> = [];

  constructor(
    private readonly events: MemberRuntimeEvents,
    private readonly recorder: HandledRecorder,
    @Inject(WORKER_CONFIG) private readonly config: WorkerConfig,
  ) {}

  onModuleInit(): void {
    if (!this.recorder.enabled) return;
    this.unsubscribe.push(
      this.events.onLifecycle((type, data) => {
        if (type === 'joining') this.memberId = (data as { memberId: string }).memberId;
      }),
      this.events.onActivity(
        (activity) => {
          const acked = activity.acked;
          if (acked === undefined) return;
          if (++this.acks === this.config.crashAfterAcks) process.kill(process.pid, 'SIGKILL');
          this.recorder.recordAck({
            a: acked.ids,
            m: this.memberId,
            s: activity.shard.shard,
            t: preciseNow(),
            t0: wallClockOf(acked.sentAt),
            st: activity.shard.stream,
          });
        },
        { handled: false },
      ),
    );
  }

  /** After the runtime stopped its readers (their final acks are recorded too). */
  onApplicationShutdown(): void {
    for (const stop of this.unsubscribe.splice(0)) stop();
  }
}
