import { z } from 'zod';
import { isStreamId, MAX_STREAM_ID_PART } from '../../store/stream-ids.js';

/** Body of `PUT /v1/streams/{stream}`, bounded by `MAX_SHARDS`. */
export function createStreamSchema(maxShards: number) {
  return z.strictObject(
    {
      shards: z
        .number({ error: 'must be a number' })
        .int({ error: 'must be an integer' })
        .min(1, { error: 'must be ≥ 1' })
        .max(maxShards, { error: `must be ≤ ${maxShards} (MAX_SHARDS)` }),
    },
    { error: 'must be a JSON object' },
  );
}

/** Body of `POST /v1/streams/{stream}/reshard`. */
export function reshardSchema(maxShards: number) {
  return z.strictObject(
    {
      shards: z
        .number({ error: 'must be a number' })
        .int({ error: 'must be an integer' })
        .min(1, { error: 'must be ≥ 1' })
        .max(maxShards, { error: `must be ≤ ${maxShards} (MAX_SHARDS)` }),
      mode: z.enum(['strict', 'relaxed'], { error: 'must be "strict" or "relaxed"' }).optional(),
    },
    { error: 'must be a JSON object' },
  );
}

/** Query of `GET /v1/groups/{groupId}/events`. */
export const eventsQuerySchema = z.strictObject(
  {
    after: z
      .string({ error: 'must be a string' })
      .refine(isStreamId, {
        error: `must be an event id like 1700000000000-0 (two integers of at most ${MAX_STREAM_ID_PART})`,
      })
      .optional(),
    limit: z
      .string({ error: 'must be a single value' })
      .regex(/^\d{1,7}$/, { error: 'must be an integer between 1 and 1000' })
      .transform(Number)
      .refine((n) => n >= 1 && n <= 1000, { error: 'must be an integer between 1 and 1000' })
      .optional(),
  },
  { error: 'must be query parameters' },
);
