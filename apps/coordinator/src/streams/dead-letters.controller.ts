import { Body, Controller, Get, HttpCode, Inject, Param, Post, Query, Req } from '@nestjs/common';
import {
  DeadLetterArgumentError,
  type DeadLetterService,
} from '@redis-stream-coordinator/nestjs/internal';
import type {
  DeadLetterEntry,
  DeadLetterFilter,
  DeadLetterListResponse,
  DeadLetterPurgeResponse,
  DeadLetterReplayResponse,
} from '@redis-stream-coordinator/nestjs/protocol';
import type { FastifyRequest } from 'fastify';
import { CoordinatorError } from '../core/coordinator-error.js';
import { streamParam } from '../http/path-params.js';
import { decodeBody, validate } from '../http/request-validation.js';
import { RequireRole } from '../http/roles.decorator.js';
import {
  deadLetterIdSchema,
  deadLetterListQuerySchema,
  deadLetterPurgeSchema,
  deadLetterReplaySchema,
} from '../http/schemas/dead-letters.schemas.js';
import { STREAM_REGISTRY } from '../store/store.tokens.js';
import type { StreamRegistry } from '../store/stream-registry.js';
import { DEAD_LETTER_SERVICE } from './streams.tokens.js';

/** The filter fields of a validated query or body, as the library's filter. */
function toFilter(f: {
  group?: string | undefined;
  reason?: DeadLetterFilter['reason'] | undefined;
  error?: string | undefined;
  from?: number | undefined;
  to?: number | undefined;
}): DeadLetterFilter {
  return {
    ...(f.group !== undefined ? { group: f.group } : {}),
    ...(f.reason !== undefined ? { reason: f.reason } : {}),
    ...(f.error !== undefined ? { error: f.error } : {}),
    ...(f.from !== undefined ? { fromMs: f.from } : {}),
    ...(f.to !== undefined ? { toMs: f.to } : {}),
  };
}

/**
 * The dead-letter routes of docs/protocol.md §16: list and show (member role), replay and purge
 * (admin), over the library's `DeadLetterService`.
 */
@Controller('v1/streams/:stream/dead-letters')
export class DeadLettersController {
  constructor(
    @Inject(DEAD_LETTER_SERVICE) private readonly service: DeadLetterService,
    @Inject(STREAM_REGISTRY) private readonly registry: StreamRegistry,
  ) {}

  @Get()
  @RequireRole('member')
  async list(
    @Param('stream') stream: string,
    @Query() query: Record<string, unknown>,
  ): Promise<DeadLetterListResponse> {
    const name = streamParam(stream);
    const q = validate(deadLetterListQuerySchema, { ...query }, 'query');
    await this.requireStream(name);
    return this.call(() =>
      this.service.list(
        name,
        {
          ...toFilter(q),
          ...(q.replayed !== undefined ? { replayed: q.replayed === 'true' } : {}),
        },
        {
          ...(q.after !== undefined ? { after: q.after } : {}),
          ...(q.limit !== undefined ? { limit: q.limit } : {}),
        },
      ),
    );
  }

  @Get(':id')
  @RequireRole('member')
  async show(@Param('stream') stream: string, @Param('id') id: string): Promise<DeadLetterEntry> {
    const name = streamParam(stream);
    const entryId = validate(deadLetterIdSchema, id, 'path parameter "id"');
    await this.requireStream(name);
    const entry = await this.call(() => this.service.get(name, entryId));
    if (entry === null) {
      throw new CoordinatorError(
        'NOT_FOUND',
        `stream "${name}" has no dead-letter entry ${entryId}; list them with GET /v1/streams/${name}/dead-letters`,
      );
    }
    return entry;
  }

  /**
   * `POST /v1/streams/{stream}/dead-letters/replay` (admin): `200` with one result per selected
   * entry; an entry replayed before is reported, not published again.
   */
  @Post('replay')
  @HttpCode(200)
  @RequireRole('admin')
  async replay(
    @Body() raw: unknown,
    @Param('stream') stream: string,
    @Req() request: FastifyRequest,
  ): Promise<DeadLetterReplayResponse> {
    const body = decodeBody(deadLetterReplaySchema, raw, {
      contentType: request.headers['content-type'],
    });
    const name = streamParam(stream);
    await this.requireStream(name);
    return this.call(() =>
      this.service.replay(
        name,
        body.ids !== undefined
          ? { ids: body.ids }
          : {
              filter: toFilter(body.filter ?? {}),
              ...(body.limit !== undefined ? { limit: body.limit } : {}),
            },
      ),
    );
  }

  /** `POST /v1/streams/{stream}/dead-letters/purge` (admin, `confirm: true`): `200` with the count. */
  @Post('purge')
  @HttpCode(200)
  @RequireRole('admin')
  async purge(
    @Body() raw: unknown,
    @Param('stream') stream: string,
    @Req() request: FastifyRequest,
  ): Promise<DeadLetterPurgeResponse> {
    const body = decodeBody(deadLetterPurgeSchema, raw, {
      contentType: request.headers['content-type'],
    });
    const name = streamParam(stream);
    await this.requireStream(name);
    const selection =
      body.all === true
        ? { all: true as const }
        : body.ids !== undefined
          ? { ids: body.ids }
          : {
              filter: toFilter(body.filter ?? {}),
              ...(body.limit !== undefined ? { limit: body.limit } : {}),
            };
    return this.call(() => this.service.purge(name, selection, { confirm: body.confirm }));
  }

  private async requireStream(name: string): Promise<void> {
    await this.registry.refresh();
    if (!this.registry.get(name)) {
      throw new CoordinatorError(
        'STREAM_NOT_FOUND',
        `stream "${name}" does not exist; create it with PUT /v1/streams/${name}`,
      );
    }
  }

  /** Runs a service call; its argument errors become INVALID_REQUEST. */
  private async call<T>(run: () => Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof DeadLetterArgumentError) {
        throw new CoordinatorError('INVALID_REQUEST', error.message);
      }
      throw error;
    }
  }
}
