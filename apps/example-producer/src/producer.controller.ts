import { Controller, Get, ServiceUnavailableException } from '@nestjs/common';
import { KeyedTrafficService, type TrafficStatus } from './keyed-traffic.service.js';

/** Health and status routes of the example producer. */
@Controller()
export class ProducerController {
  constructor(private readonly traffic: KeyedTrafficService) {}

  /** The process is up. */
  @Get('health/live')
  live(): { status: 'ok' } {
    return { status: 'ok' };
  }

  /** 200 once a publish succeeded and while the last one did (503 with the error otherwise). */
  @Get('health/ready')
  ready(): { status: 'ok'; published: number } {
    const s = this.traffic.status();
    if (s.lastError !== null || (s.published === 0 && !s.done)) {
      throw new ServiceUnavailableException({
        status: 'error',
        reason: s.lastError ?? 'nothing published yet',
      });
    }
    return { status: 'ok', published: s.published };
  }

  /** What was published, per key. */
  @Get('status')
  status(): TrafficStatus {
    return this.traffic.status();
  }
}
