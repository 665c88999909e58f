import { DEAD_LETTER_REASONS, NAME_PATTERN } from '@redis-stream-coordinator/nestjs/protocol';
import { z } from 'zod';
import { isStreamId, MAX_STREAM_ID_PART } from '../../store/stream-ids.js';

const ID_MESSAGE = `must be a dead-letter entry id like 1700000000000-0 (two integers of at most ${MAX_STREAM_ID_PART})`;

/** A dead-letter entry id. */
export const deadLetterIdSchema = z
  .string({ error: 'must be a string' })
  .refine(isStreamId, { error: ID_MESSAGE });

/** A time: ISO-8601 or ms since the epoch, as ms. */
const timeSchema = z
  .union([z.string({ error: 'must be a time' }), z.number({ error: 'must be a time' })])
  .transform((value, ctx) => {
    const ms =
      typeof value === 'number'
        ? value
        : /^\d{1,16}$/.test(value)
          ? Number(value)
          : /^\d{4}-\d{2}-\d{2}/.test(value)
            ? Date.parse(value)
            : Number.NaN;
    if (!Number.isSafeInteger(ms) || ms < 0) {
      ctx.addIssue({
        code: 'custom',
        message: 'must be an ISO-8601 time (2026-01-31T12:00:00Z) or ms since the epoch',
      });
      return z.NEVER;
    }
    return ms;
  });

/** The filter fields, shared by the list query and the replay/purge bodies. */
const filterFields = {
  group: z
    .string({ error: 'must be a string' })
    .regex(NAME_PATTERN, { error: 'must be 1-128 characters of [A-Za-z0-9._-]' })
    .optional(),
  reason: z
    .enum(DEAD_LETTER_REASONS, { error: `must be one of ${DEAD_LETTER_REASONS.join(', ')}` })
    .optional(),
  error: z
    .string({ error: 'must be a string' })
    .min(1, { error: 'must not be empty' })
    .max(1000, { error: 'must be at most 1000 characters' })
    .optional(),
  from: timeSchema.optional(),
  to: timeSchema.optional(),
};

/** A filter object of a replay or purge body. */
const filterSchema = z
  .strictObject(filterFields, { error: 'must be an object' })
  .refine((f) => f.from === undefined || f.to === undefined || f.from <= f.to, {
    error: '"from" must not be after "to"',
  });

/** Query of `GET /v1/streams/{stream}/dead-letters`. */
export const deadLetterListQuerySchema = z
  .strictObject(
    {
      ...filterFields,
      replayed: z.enum(['true', 'false'], { error: 'must be true or false' }).optional(),
      after: deadLetterIdSchema.optional(),
      limit: z
        .string({ error: 'must be a single value' })
        .regex(/^\d{1,7}$/, { error: 'must be an integer between 1 and 1000' })
        .transform(Number)
        .refine((n) => n >= 1 && n <= 1000, { error: 'must be an integer between 1 and 1000' })
        .optional(),
    },
    { error: 'must be query parameters' },
  )
  .refine((f) => f.from === undefined || f.to === undefined || f.from <= f.to, {
    error: '"from" must not be after "to"',
  });

const idsSchema = z
  .array(deadLetterIdSchema, { error: 'must be a list of dead-letter entry ids' })
  .min(1, { error: 'must list at least one id' })
  .max(1000, { error: 'must list at most 1000 ids' });

const selectedLimit = z
  .number({ error: 'must be a number' })
  .int({ error: 'must be an integer' })
  .min(1, { error: 'must be ≥ 1' })
  .max(10_000, { error: 'must be ≤ 10000' });

/** Body of `POST /v1/streams/{stream}/dead-letters/replay`: `ids`, or a `filter` (and `limit`). */
export const deadLetterReplaySchema = z
  .strictObject(
    { ids: idsSchema.optional(), filter: filterSchema.optional(), limit: selectedLimit.optional() },
    { error: 'must be a JSON object' },
  )
  .refine((b) => (b.ids === undefined) !== (b.filter === undefined), {
    error:
      'must have either "ids" or "filter" (an empty filter {} selects every entry not yet replayed)',
  })
  .refine((b) => b.ids === undefined || b.limit === undefined, {
    error: '"limit" goes with "filter", not with "ids"',
  });

/**
 * Body of `POST /v1/streams/{stream}/dead-letters/purge`: `confirm: true` and one of `ids`,
 * `filter` (and `limit`) or `all: true`.
 */
export const deadLetterPurgeSchema = z
  .strictObject(
    {
      confirm: z.literal(true, {
        error: 'must be true: a purge deletes dead letters for good',
      }),
      ids: idsSchema.optional(),
      filter: filterSchema.optional(),
      limit: selectedLimit.optional(),
      all: z.literal(true, { error: 'must be true when present' }).optional(),
    },
    { error: 'must be a JSON object' },
  )
  .refine(
    (b) =>
      [b.ids !== undefined, b.filter !== undefined, b.all !== undefined].filter(Boolean).length ===
      1,
    { error: 'must have exactly one of "ids", "filter" or "all"' },
  )
  .refine((b) => b.filter !== undefined || b.limit === undefined, {
    error: '"limit" goes with "filter"',
  });
