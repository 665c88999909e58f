import { Controller, Get } from '@nestjs/common';
import { HealthCheck, HealthCheckService, type HealthCheckResult } from '@nestjs/terminus';
import { StreamCoordinatorHealthIndicator } from '@redis-stream-coordinator/nestjs/health';

/** `GET /health/ready`: the library's member checks (503 with the reasons when one is down). */
@Controller('health')
export class HealthController {
  constructor(
    private readonly health: HealthCheckService,
    private readonly member: StreamCoordinatorHealthIndicator,
  ) {}

  @Get('ready')
  @HealthCheck()
  ready(): Promise<HealthCheckResult> {
    return this.health.check([
      () => this.member.coordinator('coordinator'),
      () => this.member.fencing('fencing'),
      () => this.member.assignment('assignment'),
      () => this.member.readers('readers'),
      () => this.member.redis('redis'),
    ]);
  }
}
