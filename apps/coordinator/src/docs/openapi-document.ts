import { z } from 'zod';
import { errorBodySchema } from '../http/schemas/common.schemas.js';
import {
  heartbeatRequestSchema,
  heartbeatResponseSchema,
  leaveRequestSchema,
  leaveResponseSchema,
  memberIdRequestSchema,
} from '../http/schemas/heartbeat.schemas.js';
import {
  deadLetterPurgeSchema,
  deadLetterReplaySchema,
} from '../http/schemas/dead-letters.schemas.js';
import { createStreamSchema, reshardSchema } from '../http/schemas/streams.schemas.js';

type JsonSchema = Record<string, unknown>;

function schemaOf(schema: z.ZodType, io: 'input' | 'output' = 'input'): JsonSchema {
  const json = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as JsonSchema;
  delete json.$schema;
  return json;
}

const errorResponse = (description: string) => ({
  description,
  content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
});

const json = (schema: JsonSchema | { $ref: string }, description = 'OK') => ({
  description,
  content: { 'application/json': { schema } },
});

const freeForm = { type: 'object', additionalProperties: true };

function op(
  summary: string,
  role: 'member' | 'admin' | null,
  responses: Record<string, unknown>,
  requestBody?: JsonSchema,
  parameters: unknown[] = [],
): Record<string, unknown> {
  return {
    summary,
    ...(role ? { security: [{ bearer: [] }], 'x-required-role': role } : {}),
    ...(parameters.length ? { parameters } : {}),
    ...(requestBody
      ? {
          requestBody: { required: true, content: { 'application/json': { schema: requestBody } } },
        }
      : {}),
    responses: {
      ...responses,
      ...(role
        ? {
            '401': errorResponse('UNAUTHENTICATED'),
            ...(role === 'admin' ? { '403': errorResponse('FORBIDDEN') } : {}),
          }
        : {}),
      ...(requestBody
        ? { '400': errorResponse('INVALID_REQUEST'), '413': errorResponse('PAYLOAD_TOO_LARGE') }
        : {}),
      '503': errorResponse('COORDINATOR_NOT_AVAILABLE'),
    },
  };
}

const path = (name: string, description: string) => ({
  name,
  in: 'path',
  required: true,
  description,
  schema: { type: 'string' },
});
const groupParam = path('groupId', 'Group name: 1-128 characters of [A-Za-z0-9._-].');
const streamParam = path('stream', 'Stream name: 1-128 characters of [A-Za-z0-9._-].');
const deadLetterIdParam = path('id', 'Dead-letter entry id, like 1700000000000-0.');
const query = (name: string, description: string) => ({
  name,
  in: 'query',
  required: false,
  description,
  schema: { type: 'string' },
});
const deadLetterQuery = [
  query('group', 'Only entries of this consumer group.'),
  query('reason', 'Only this reason: max-deliveries, undecodable or non-retryable.'),
  query('error', 'Only entries whose error message or class name contains this text (any case).'),
  query('from', 'Only entries dead-lettered at or after this time (ISO-8601 or ms).'),
  query('to', 'Only entries dead-lettered at or before this time (ISO-8601 or ms).'),
  query('replayed', 'true: only replayed entries; false: only entries never replayed.'),
  query('after', 'Continue after this entry id (the previous nextCursor).'),
  query('limit', 'Entries per page, 1-1000 (default 100).'),
];

/** The OpenAPI 3.1 document of the coordinator's HTTP API, served at `/docs`. */
export function buildOpenApiDocument(maxShards: number): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: {
      title: 'Redis Stream Coordinator',
      version: '1',
      description:
        'KIP-848-style group protocol for Redis Stream shards. Errors are {error: {code, message}}; see docs/protocol.md §2.3 for the rules behind each code.',
    },
    components: {
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
      schemas: { Error: schemaOf(errorBodySchema, 'output') },
    },
    paths: {
      '/v1/groups/{groupId}/heartbeat': {
        post: op(
          'Join, heartbeat, acknowledge revocations, or leave (-1, -2)',
          'member',
          {
            '200': json({
              oneOf: [
                schemaOf(heartbeatResponseSchema, 'output'),
                schemaOf(leaveResponseSchema, 'output'),
              ],
            }),
            '404': errorResponse('GROUP_ID_NOT_FOUND'),
            '409': errorResponse(
              'UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH, UNRELEASED_INSTANCE_ID, MEMBER_ID_IN_USE, FENCED_INSTANCE_ID, GROUP_MAX_SIZE_REACHED, MAX_GROUPS_REACHED',
            ),
          },
          schemaOf(heartbeatRequestSchema),
          [groupParam],
        ),
      },
      '/v1/groups/{groupId}/leave': {
        post: op(
          'Leave the group (or leave temporarily as a static member)',
          'member',
          {
            '200': json(schemaOf(leaveResponseSchema, 'output')),
            '404': errorResponse('GROUP_ID_NOT_FOUND'),
            '409': errorResponse('UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID'),
          },
          schemaOf(leaveRequestSchema),
          [groupParam],
        ),
      },
      '/v1/groups': { get: op('List groups', 'member', { '200': json(freeForm) }) },
      '/v1/groups/{groupId}': {
        get: op(
          'Describe a group',
          'member',
          { '200': json(freeForm), '404': errorResponse('GROUP_ID_NOT_FOUND') },
          undefined,
          [groupParam],
        ),
        delete: op(
          'Delete an EMPTY group',
          'admin',
          {
            '204': { description: 'Deleted' },
            '404': errorResponse('GROUP_ID_NOT_FOUND'),
            '409': errorResponse('GROUP_NOT_EMPTY'),
          },
          undefined,
          [groupParam],
        ),
      },
      '/v1/groups/{groupId}/members/{memberId}': {
        delete: op(
          'Remove a member as if it expired',
          'admin',
          {
            '204': { description: 'Removed' },
            '404': errorResponse('GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID'),
          },
          undefined,
          [groupParam, path('memberId', 'URL-encoded member id')],
        ),
      },
      '/v1/groups/{groupId}/member-ids': {
        post: op(
          'Issue a member id',
          'member',
          { '201': json({ type: 'object', properties: { memberId: { type: 'string' } } }) },
          schemaOf(memberIdRequestSchema),
          [groupParam],
        ),
      },
      '/v1/groups/{groupId}/events': {
        get: op(
          'Read the group event log',
          'member',
          { '200': json(freeForm), '404': errorResponse('GROUP_ID_NOT_FOUND') },
          undefined,
          [
            groupParam,
            {
              name: 'after',
              in: 'query',
              required: false,
              schema: { type: 'string' },
              description: 'Exclusive event id (`<ms>-<seq>`, each part at most 2^64-1)',
            },
            {
              name: 'limit',
              in: 'query',
              required: false,
              schema: { type: 'integer', minimum: 1, maximum: 1000, default: 100 },
            },
          ],
        ),
      },
      '/v1/streams': {
        get: op('List streams with their routing', 'member', { '200': json(freeForm) }),
      },
      '/v1/streams/{stream}': {
        get: op(
          'Routing metadata',
          'member',
          { '200': json(freeForm), '404': errorResponse('STREAM_NOT_FOUND') },
          undefined,
          [streamParam],
        ),
        put: op(
          'Create a stream (idempotent for the same shard count)',
          'admin',
          {
            '200': json(freeForm, 'Exists'),
            '201': json(freeForm, 'Created'),
            '409': errorResponse('STREAM_EXISTS'),
          },
          schemaOf(createStreamSchema(maxShards)),
          [streamParam],
        ),
      },
      '/v1/streams/{stream}/reshard': {
        post: op(
          'Change the shard count while producers and consumers run (every shard is replaced; strict mode keeps per-key order)',
          'admin',
          {
            '202': json(freeForm, 'Accepted: the routing body, with the resharding progress'),
            '200': json(freeForm, 'The stream already has that many shards: nothing changed'),
            '404': errorResponse('STREAM_NOT_FOUND'),
            '409': errorResponse('RESHARD_IN_PROGRESS'),
          },
          schemaOf(reshardSchema(maxShards)),
          [streamParam],
        ),
      },
      '/v1/streams/{stream}/groups/{groupId}/abandon': {
        post: op(
          'Stop the running reshard waiting for a group: its unread messages in the old shards are given up and deleted with them (logged in the event logs)',
          'admin',
          {
            '200': json(freeForm, 'The routing body; the group is in resharding.abandonedGroups'),
            '404': errorResponse('NOT_FOUND'),
            '409': errorResponse(
              'RESHARD_IN_PROGRESS (still preparing), or GROUP_NOT_EMPTY (the group has a member subscribed to the stream: stop its members first)',
            ),
          },
          undefined,
          [streamParam, groupParam],
        ),
      },
      '/v1/streams/{stream}/dead-letters': {
        get: op(
          'List the dead letters of a stream, oldest first, filtered (docs/protocol.md §16)',
          'member',
          {
            '200': json(freeForm, 'entries, nextCursor (null at the end), scanned'),
            '400': errorResponse('INVALID_REQUEST'),
            '404': errorResponse('STREAM_NOT_FOUND'),
          },
          undefined,
          [streamParam, ...deadLetterQuery],
        ),
      },
      '/v1/streams/{stream}/dead-letters/{id}': {
        get: op(
          'One dead-letter entry: key, payload, headers, error (message, class, properties), where and when',
          'member',
          {
            '200': json(freeForm),
            '400': errorResponse('INVALID_REQUEST'),
            '404': errorResponse('STREAM_NOT_FOUND or NOT_FOUND (no such entry)'),
          },
          undefined,
          [streamParam, deadLetterIdParam],
        ),
      },
      '/v1/streams/{stream}/dead-letters/replay': {
        post: op(
          'Re-publish dead letters by key through the current routing, each at most once (marked replayed)',
          'admin',
          {
            '200': json(freeForm, 'One result per selected entry, and the count replayed'),
            '404': errorResponse('STREAM_NOT_FOUND'),
          },
          schemaOf(deadLetterReplaySchema),
          [streamParam],
        ),
      },
      '/v1/streams/{stream}/dead-letters/purge': {
        post: op(
          'Delete dead letters for good (confirm: true; ids, a filter, or all)',
          'admin',
          {
            '200': json(freeForm, 'How many entries were deleted'),
            '404': errorResponse('STREAM_NOT_FOUND'),
          },
          schemaOf(deadLetterPurgeSchema),
          [streamParam],
        ),
      },
      '/ui': {
        get: {
          summary:
            'The dashboard page (static shell; its data comes from /ui/api with a viewer token)',
          responses: { '200': { description: 'text/html' } },
        },
      },
      '/ui/api/overview': {
        get: op('Dashboard: groups and streams', 'admin', { '200': json(freeForm) }),
      },
      '/ui/api/groups/{groupId}': {
        get: op(
          'Dashboard: one group (members, shard ownership with lag, rebalance timeline, reshard progress)',
          'admin',
          { '200': json(freeForm), '404': errorResponse('GROUP_ID_NOT_FOUND') },
          undefined,
          [groupParam],
        ),
      },
      '/health/live': { get: op('Liveness', null, { '200': json(freeForm) }) },
      '/health/ready': { get: op('Readiness', null, { '200': json(freeForm) }) },
      '/metrics': {
        get: {
          summary: 'Prometheus metrics',
          responses: { '200': { description: 'text/plain exposition' } },
        },
      },
    },
  };
}
