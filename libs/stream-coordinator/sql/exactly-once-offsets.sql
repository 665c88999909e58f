-- Offsets table of @redis-stream-coordinator/nestjs/postgres (exactly-once effects).
-- One row per (group, stream, shard): the last Redis Stream entry id settled there, as two
-- unsigned 64-bit parts (numeric(20,0): bigint is signed), the last entry settled there as a
-- dead letter (no effects), as <ms>-<seq>, or NULL, and the shard's latest 32 dead-lettered
-- entries, oldest first (so a dead letter Redis lost with its last writes is written again).
-- Rename the table if you like and pass the name as `table` to PostgresExactlyOnceModule.forRoot.
-- Same text as offsetsTableDdl() / createExactlyOnceTable(). See docs/exactly-once.md.
-- Idempotent: run it again to bring a table created by an older version (without
-- dead_lettered_id or recent_dead_letters) up to date. The DO block adds the columns without
-- rewriting the table, and takes no lock when they are there.
CREATE TABLE IF NOT EXISTS "rsc_applied_offsets" (
  consumer_group text NOT NULL,
  stream text NOT NULL,
  shard integer NOT NULL,
  last_ms numeric(20, 0) NOT NULL,
  last_seq numeric(20, 0) NOT NULL,
  dead_lettered_id text,
  recent_dead_letters text[] NOT NULL DEFAULT '{}',
  applied_by text NOT NULL DEFAULT '',
  applied_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (consumer_group, stream, shard)
);
DO $$
BEGIN
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('"rsc_applied_offsets"') AND attname = 'dead_lettered_id' AND NOT attisdropped) THEN
    ALTER TABLE "rsc_applied_offsets" ADD COLUMN IF NOT EXISTS dead_lettered_id text;
  END IF;
  IF NOT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('"rsc_applied_offsets"') AND attname = 'recent_dead_letters' AND NOT attisdropped) THEN
    ALTER TABLE "rsc_applied_offsets" ADD COLUMN IF NOT EXISTS recent_dead_letters text[] NOT NULL DEFAULT '{}';
  END IF;
END
$$;
