import { Module } from '@nestjs/common';
import type { KeySpace } from '@redis-stream-coordinator/nestjs/protocol';
import type { RedisConnection } from '@redis-stream-coordinator/nestjs/internal';
import { GroupsModule } from '../groups/groups.module.js';
import { GROUP_STORE, KEY_SPACE } from '../store/store.tokens.js';
import { COORDINATOR_REDIS } from '../redis/redis.tokens.js';
import type { GroupStore } from '../store/group-store.js';
import { GroupProjector } from './group-projector.js';
import { ProjectionStore } from './projection-store.js';
import { GROUP_PROJECTOR } from './projections.tokens.js';

/** The event-log projections of groups (`…:projection` keys), kept up to date on demand. */
@Module({
  imports: [GroupsModule],
  providers: [
    {
      provide: GROUP_PROJECTOR,
      inject: [GROUP_STORE, COORDINATOR_REDIS, KEY_SPACE],
      useFactory: (store: GroupStore, redis: RedisConnection, keys: KeySpace) =>
        new GroupProjector(store, new ProjectionStore(redis, keys)),
    },
  ],
  exports: [GROUP_PROJECTOR],
})
export class ProjectionsModule {}
