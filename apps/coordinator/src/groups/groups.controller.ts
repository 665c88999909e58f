import { randomUUID } from 'node:crypto';
import {
  Body,
  Controller,
  Delete,
  Get,
  HttpCode,
  Inject,
  Param,
  Post,
  Query,
  Req,
} from '@nestjs/common';
import type {
  DescribedGroup,
  GroupEventEntry,
  GroupListing,
  HeartbeatResponse,
  LeaveResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import { PROTOCOL_LIMITS } from '@redis-stream-coordinator/nestjs/protocol';
import type { FastifyRequest } from 'fastify';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { CoordinatorError } from '../core/coordinator-error.js';
import { groupIdParam, memberIdParam } from '../http/path-params.js';
import { decodeBody, validate } from '../http/request-validation.js';
import { RequireRole } from '../http/roles.decorator.js';
import { StatusOverrideError } from '../http/status-override.error.js';
import {
  heartbeatRequestSchema,
  leaveRequestSchema,
  memberIdRequestSchema,
} from '../http/schemas/heartbeat.schemas.js';
import { eventsQuerySchema } from '../http/schemas/streams.schemas.js';
import { CoordinatorMetrics } from '../metrics/coordinator-metrics.js';
import type { GroupStore } from '../store/group-store.js';
import { describeGroup, listGroup } from './group-describer.js';
import type { GroupCoordinator } from './group-coordinator.js';
import { GROUP_STORE } from '../store/store.tokens.js';
import { GROUP_COORDINATOR } from './groups.tokens.js';

/** The group routes of docs/protocol.md §3 and §6. Bodies arrive raw and are decoded after auth. */
@Controller('v1/groups')
export class GroupsController {
  constructor(
    @Inject(GROUP_COORDINATOR) private readonly coordinator: GroupCoordinator,
    @Inject(GROUP_STORE) private readonly store: GroupStore,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
    @Inject(CoordinatorMetrics) private readonly metrics: CoordinatorMetrics,
  ) {}

  @Post(':groupId/heartbeat')
  @HttpCode(200)
  @RequireRole('member')
  async heartbeat(
    @Body() raw: unknown,
    @Param('groupId') groupId: string,
    @Req() request: FastifyRequest,
  ): Promise<HeartbeatResponse | LeaveResponse> {
    const stopTimer = this.metrics.heartbeatDuration.startTimer();
    let outcome = 'ok';
    try {
      const body = decodeBody(heartbeatRequestSchema, raw, {
        contentType: request.headers['content-type'],
      });
      return await this.coordinator.heartbeat(groupIdParam(groupId), body, request.ip ?? null);
    } catch (error) {
      outcome = error instanceof CoordinatorError ? error.code : 'COORDINATOR_NOT_AVAILABLE';
      throw error;
    } finally {
      stopTimer();
      this.metrics.heartbeats.inc({ group: heartbeatGroupLabel(groupId, outcome), outcome });
    }
  }

  @Post(':groupId/leave')
  @HttpCode(200)
  @RequireRole('member')
  leave(
    @Body() raw: unknown,
    @Param('groupId') groupId: string,
    @Req() request: FastifyRequest,
  ): Promise<LeaveResponse> {
    const body = decodeBody(leaveRequestSchema, raw, {
      contentType: request.headers['content-type'],
    });
    return this.coordinator.leave(groupIdParam(groupId), body);
  }

  @Get()
  @RequireRole('viewer')
  async list(): Promise<{ groups: GroupListing[] }> {
    const ids = await this.store.listGroupIds();
    const groups: GroupListing[] = [];
    for (const id of ids) {
      const { state, exists } = await this.coordinator.read(id);
      if (exists) groups.push(listGroup(state));
    }
    return { groups };
  }

  @Get(':groupId')
  @RequireRole('viewer')
  async describe(@Param('groupId') groupId: string): Promise<DescribedGroup> {
    const id = groupIdParam(groupId);
    const { state, exists } = await this.coordinator.read(id);
    if (!exists) throw new CoordinatorError('GROUP_ID_NOT_FOUND', `group "${id}" does not exist`);
    return describeGroup(
      state,
      await this.store.lastSeen(id),
      this.config.defaultAssignor,
      this.coordinator.rules.assignors,
    );
  }

  @Delete(':groupId/members/:memberId')
  @HttpCode(204)
  @RequireRole('admin')
  async removeMember(
    @Param('groupId') groupId: string,
    @Param('memberId') memberId: string,
  ): Promise<void> {
    const group = groupIdParam(groupId);
    const member = memberIdParam(memberId);
    try {
      await this.coordinator.removeMemberByAdmin(group, member);
    } catch (error) {
      // docs/protocol.md §6.5: an unknown member is 404 on this admin route (409 on member routes).
      throw StatusOverrideError.remap(error, 'UNKNOWN_MEMBER_ID', 404);
    }
  }

  @Delete(':groupId')
  @HttpCode(204)
  @RequireRole('admin')
  async deleteGroup(@Param('groupId') groupId: string): Promise<void> {
    await this.coordinator.deleteGroup(groupIdParam(groupId));
  }

  @Post(':groupId/member-ids')
  @HttpCode(201)
  @RequireRole('member')
  issueMemberId(
    @Body() raw: unknown,
    @Param('groupId') groupId: string,
    @Req() request: FastifyRequest,
  ): { memberId: string } {
    decodeBody(memberIdRequestSchema, raw, {
      allowEmpty: true,
      contentType: request.headers['content-type'],
    });
    groupIdParam(groupId);
    return { memberId: randomUUID() };
  }

  @Get(':groupId/events')
  @RequireRole('viewer')
  async events(
    @Param('groupId') groupId: string,
    @Query() query: Record<string, unknown>,
  ): Promise<{ events: GroupEventEntry[] }> {
    const id = groupIdParam(groupId);
    const q = validate(eventsQuerySchema, { ...query }, 'query');
    const { exists } = await this.coordinator.read(id);
    if (!exists) throw new CoordinatorError('GROUP_ID_NOT_FOUND', `group "${id}" does not exist`);
    return {
      events: await this.store.events(id, q.after, q.limit ?? PROTOCOL_LIMITS.defaultEventsLimit),
    };
  }
}

/** Outcomes decided before the group is looked up: the path may name no real group. */
const PRE_GROUP_OUTCOMES = new Set([
  'INVALID_REQUEST',
  'PAYLOAD_TOO_LARGE',
  'UNSUPPORTED_ASSIGNOR',
  'GROUP_ID_NOT_FOUND',
]);

/**
 * The `group` label of a heartbeat metric: the group id, except for requests refused before the
 * group was found (bad input, unknown group), which share the label `""` so that arbitrary path
 * segments can never grow the label set.
 */
function heartbeatGroupLabel(groupId: string, outcome: string): string {
  return PRE_GROUP_OUTCOMES.has(outcome) ? '' : groupId;
}
