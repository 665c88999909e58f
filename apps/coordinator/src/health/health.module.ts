import { Module } from '@nestjs/common';
import { TerminusModule } from '@nestjs/terminus';
import { GroupsModule } from '../groups/groups.module.js';
import { EvictionPolicyCheck } from './eviction-policy.js';
import { HealthController } from './health.controller.js';
import { KeyLayoutHealthIndicator } from './key-layout.health.js';
import { RedisHealthIndicator } from './redis.health.js';
import { ServingState } from './serving-state.js';

/** `/health/live` and `/health/ready`. */
@Module({
  imports: [TerminusModule.forRoot({ errorLogStyle: 'pretty', logger: false }), GroupsModule],
  controllers: [HealthController],
  providers: [RedisHealthIndicator, KeyLayoutHealthIndicator, ServingState, EvictionPolicyCheck],
  exports: [ServingState, EvictionPolicyCheck],
})
export class HealthModule {}
