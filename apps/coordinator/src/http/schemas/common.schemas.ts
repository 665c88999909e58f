import { ID_PATTERN, NAME_PATTERN } from '@redis-stream-coordinator/nestjs/protocol';
import { z } from 'zod';

/** Group or stream name (docs/protocol.md §2.5). */
export const nameSchema = z
  .string({ error: 'must be a string' })
  .regex(NAME_PATTERN, { error: 'must be 1-128 characters of [A-Za-z0-9._-]' });

/** Member, instance, rack id or assignor name (printable ASCII, 1-255). */
export const idSchema = z
  .string({ error: 'must be a string' })
  .regex(ID_PATTERN, { error: 'must be 1-255 printable ASCII characters (0x21-0x7E)' });

/** A non-negative safe integer shard id. */
export const shardIdSchema = z
  .number({ error: 'must be a number' })
  .int({ error: 'must be an integer' })
  .min(0, { error: 'must be ≥ 0' })
  .max(Number.MAX_SAFE_INTEGER, { error: 'is too large' });

/** `[{stream, shards}]` with no duplicate streams or shard ids. */
export const streamShardsListSchema = z
  .array(
    z.strictObject(
      {
        stream: nameSchema,
        shards: z
          .array(shardIdSchema, { error: 'must be an array of shard ids' })
          .max(100_000, { error: 'has too many shard ids' })
          .refine((ids) => new Set(ids).size === ids.length, { error: 'has duplicate shard ids' }),
      },
      { error: 'must be an object {stream, shards}' },
    ),
    { error: 'must be an array of {stream, shards}' },
  )
  .max(10_000, { error: 'has too many entries' })
  .refine((entries) => new Set(entries.map((e) => e.stream)).size === entries.length, {
    error: 'lists a stream twice',
  });

/** `{"error": {"code", "message"}}` (documentation). */
export const errorBodySchema = z.object({
  error: z.object({ code: z.string(), message: z.string() }),
});
