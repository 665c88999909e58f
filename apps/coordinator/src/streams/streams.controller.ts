import {
  Body,
  Controller,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Put,
  Req,
  Res,
} from '@nestjs/common';
import type { StreamRouting } from '@redis-stream-coordinator/nestjs/protocol';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { CoordinatorError } from '../core/coordinator-error.js';
import { groupIdParam, streamParam } from '../http/path-params.js';
import { decodeBody } from '../http/request-validation.js';
import { RequireRole } from '../http/roles.decorator.js';
import { createStreamSchema, reshardSchema } from '../http/schemas/streams.schemas.js';
import type { RedisClock } from '../store/redis-clock.js';
import { REDIS_CLOCK, STREAM_REGISTRY } from '../store/store.tokens.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import type { ReshardDriver } from './reshard-driver.js';
import { RESHARD_DRIVER } from './streams.tokens.js';

/** The stream routes of docs/protocol.md §8–§9: creation, routing metadata and resharding. */
@Controller('v1/streams')
export class StreamsController {
  private readonly createSchema;
  private readonly reshardSchema;

  constructor(
    @Inject(STREAM_REGISTRY) private readonly registry: StreamRegistry,
    @Inject(REDIS_CLOCK) private readonly clock: RedisClock,
    @Inject(RESHARD_DRIVER) private readonly driver: ReshardDriver,
    @Inject(COORDINATOR_CONFIG) config: CoordinatorConfig,
  ) {
    this.createSchema = createStreamSchema(config.maxShards);
    this.reshardSchema = reshardSchema(config.maxShards);
  }

  @Get()
  @RequireRole('viewer')
  async list(): Promise<{ streams: StreamRouting[] }> {
    await this.registry.refresh();
    return { streams: this.registry.list().map((r) => this.registry.routing(r)) };
  }

  @Put(':stream')
  @RequireRole('admin')
  async create(
    @Body() raw: unknown,
    @Param('stream') stream: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<StreamRouting> {
    const body = decodeBody(this.createSchema, raw, {
      contentType: request.headers['content-type'],
    });
    const name = streamParam(stream);
    const result = await this.registry.create(name, body.shards, this.clock.now());
    if (result.status === 'conflict') {
      throw new CoordinatorError(
        'STREAM_EXISTS',
        `stream "${name}" already exists with ${result.record.shards.length} shard(s); use POST /v1/streams/${name}/reshard to change the count`,
      );
    }
    void reply.status(result.status === 'created' ? 201 : 200);
    return this.registry.routing(result.record);
  }

  @Get(':stream')
  @RequireRole('viewer')
  async get(@Param('stream') stream: string): Promise<StreamRouting> {
    const name = streamParam(stream);
    // Always fresh: a producer asks after STALE_ROUTING and must see the newest layout.
    await this.registry.refresh();
    const record = this.registry.get(name);
    if (!record)
      throw new CoordinatorError(
        'STREAM_NOT_FOUND',
        `stream "${name}" does not exist; create it with PUT /v1/streams/${name}`,
      );
    return this.registry.routing(record);
  }

  /**
   * `POST /v1/streams/{stream}/reshard` (admin): `202` with the routing body once the reshard is
   * persisted (its first steps are taken at once, so the body normally shows the new layout);
   * `200` with the unchanged routing when the stream already has that many shards.
   */
  @Post(':stream/reshard')
  @RequireRole('admin')
  async reshard(
    @Body() raw: unknown,
    @Param('stream') stream: string,
    @Req() request: FastifyRequest,
    @Res({ passthrough: true }) reply: FastifyReply,
  ): Promise<StreamRouting> {
    const body = decodeBody(this.reshardSchema, raw, {
      contentType: request.headers['content-type'],
    });
    const name = streamParam(stream);
    const result = await this.driver.request(name, {
      shards: body.shards,
      mode: body.mode ?? 'strict',
    });
    void reply.status(result.outcome === 'accepted' ? 202 : 200);
    return this.registry.routing(result.record);
  }

  /**
   * `POST /v1/streams/{stream}/groups/{groupId}/abandon` (admin): the running reshard stops waiting
   * for the group — its unread messages in the old shards are given up and deleted with them, and
   * it sees only the new shards. `200` with the routing body (the group is listed in
   * `resharding.abandonedGroups`, also when it already was); `404` for an unknown stream, a stream
   * without a reshard, or a group the reshard does not track; `409` while it is `preparing`, or
   * (`GROUP_NOT_EMPTY`) when the group has a member subscribed to the stream.
   */
  @Post(':stream/groups/:groupId/abandon')
  @HttpCode(200)
  @RequireRole('admin')
  async abandon(
    @Param('stream') stream: string,
    @Param('groupId') groupId: string,
  ): Promise<StreamRouting> {
    const name = streamParam(stream);
    const group = groupIdParam(groupId);
    return this.registry.routing(await this.driver.abandon(name, group));
  }
}
