import { z } from 'zod';
import { idSchema, nameSchema, streamShardsListSchema } from './common.schemas.js';

/** Body of `POST /v1/groups/{groupId}/heartbeat` (docs/protocol.md §3.1). */
export const heartbeatRequestSchema = z
  .strictObject(
    {
      memberId: idSchema,
      memberEpoch: z
        .number({ error: 'must be a number' })
        .int({ error: 'must be an integer' })
        .min(-2, {
          error: 'must be ≥ -2 (0 join, -1 leave, -2 static temporary leave, >0 current epoch)',
        })
        .max(2_147_483_647, { error: 'is too large' }),
      instanceId: idSchema.optional(),
      rackId: idSchema.optional(),
      runId: idSchema.optional(),
      rebalanceTimeoutMs: z
        .number({ error: 'must be a number' })
        .int({ error: 'must be an integer' })
        .min(1, { error: 'must be ≥ 1' })
        .max(2_147_483_647, { error: 'must be ≤ 2147483647' })
        .optional(),
      subscribedStreams: z
        .array(nameSchema, { error: 'must be an array of stream names' })
        .max(10_000, { error: 'has too many streams' })
        .optional(),
      assignor: idSchema.optional(),
      ownedShards: streamShardsListSchema.optional(),
    },
    { error: 'must be a JSON object' },
  )
  .superRefine((req, ctx) => {
    if (req.memberEpoch === 0) {
      if (req.rebalanceTimeoutMs === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['rebalanceTimeoutMs'],
          message: 'is required on join (memberEpoch 0)',
        });
      }
      if (req.subscribedStreams === undefined || req.subscribedStreams.length === 0) {
        ctx.addIssue({
          code: 'custom',
          path: ['subscribedStreams'],
          message: 'must be a non-empty array on join (memberEpoch 0)',
        });
      }
      if (req.ownedShards === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['ownedShards'],
          message: 'is required on join and must be []',
        });
      } else if (req.ownedShards.some((e) => e.shards.length > 0)) {
        ctx.addIssue({
          code: 'custom',
          path: ['ownedShards'],
          message: 'must be [] on join (memberEpoch 0)',
        });
      }
    }
    if (req.memberEpoch === -2 && req.instanceId === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['instanceId'],
        message: 'is required for a temporary leave (memberEpoch -2)',
      });
    }
  });

/** Body of `POST /v1/groups/{groupId}/leave` (docs/protocol.md §6.1). */
export const leaveRequestSchema = z
  .strictObject(
    {
      memberId: idSchema,
      instanceId: idSchema.optional(),
      temporary: z.boolean({ error: 'must be a boolean' }).optional(),
      memberEpoch: z
        .number({ error: 'must be a number' })
        .int({ error: 'must be an integer' })
        .optional(),
    },
    { error: 'must be a JSON object' },
  )
  .superRefine((req, ctx) => {
    if (req.temporary === true && req.instanceId === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['instanceId'],
        message: 'is required when temporary is true',
      });
    }
  });

/** Body of `POST /v1/groups/{groupId}/member-ids`: `{}`. */
export const memberIdRequestSchema = z.strictObject({}, { error: 'must be a JSON object' });

const shardsWire = z.array(z.object({ stream: z.string(), shards: z.array(z.number().int()) }));

/** `200` of a heartbeat (documentation). */
export const heartbeatResponseSchema = z.object({
  memberId: z.string(),
  memberEpoch: z.number().int(),
  heartbeatIntervalMs: z.number().int(),
  sessionTimeoutMs: z.number().int(),
  assignment: z
    .object({
      shards: z.array(
        z.object({
          stream: z.string(),
          shards: z.array(z.number().int()),
          keys: z.array(z.string()),
        }),
      ),
    })
    .optional(),
  diff: z.object({ added: shardsWire, revoking: shardsWire, awaitingRelease: shardsWire }),
});

/** Leave response (documentation). */
export const leaveResponseSchema = z.object({
  memberId: z.string(),
  memberEpoch: z.number().int(),
});

export { nameSchema };
