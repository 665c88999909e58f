import { Controller, Get, Header, Inject } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { COORDINATOR_METRICS_REGISTRY } from './metrics.tokens.js';

/** `GET /metrics`: Prometheus text exposition, no token needed (docs/protocol.md §15.2). */
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(COORDINATOR_METRICS_REGISTRY) private readonly registry: Registry) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
