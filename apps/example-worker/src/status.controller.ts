import { Controller, Get, Inject } from '@nestjs/common';
import { MemberRuntime } from '@redis-stream-coordinator/nestjs/internal';
import { type HandledCounter, ORDERS_HANDLER } from './worker.tokens.js';

/** `GET /status`: what this worker owns and has handled (the demo's dashboard reads it). */
@Controller('status')
export class StatusController {
  constructor(
    private readonly runtime: MemberRuntime,
    @Inject(ORDERS_HANDLER) private readonly orders: HandledCounter,
  ) {}

  @Get()
  status(): Record<string, unknown> {
    const s = this.runtime.status();
    return {
      memberId: s.memberId,
      memberEpoch: s.memberEpoch,
      phase: s.phase,
      shards: s.held.map((h) => h.shard).sort((a, b) => a - b),
      handled: this.orders.handled,
    };
  }
}
