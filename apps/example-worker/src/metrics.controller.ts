import { Controller, Get, Header, Inject } from '@nestjs/common';
import type { Registry } from 'prom-client';
import { WORKER_METRICS_REGISTRY } from './worker.tokens.js';

/** `GET /metrics`: the app's own prom-client registry, which the library's member metrics join. */
@Controller('metrics')
export class MetricsController {
  constructor(@Inject(WORKER_METRICS_REGISTRY) private readonly registry: Registry) {}

  @Get()
  @Header('Content-Type', 'text/plain; version=0.0.4; charset=utf-8')
  metrics(): Promise<string> {
    return this.registry.metrics();
  }
}
