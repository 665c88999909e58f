-- The example-orders app's table. Run it with the package's offsets table
-- (node_modules/@redis-stream-coordinator/nestjs/sql/exactly-once-offsets.sql) in the same
-- database: `node apps/example-orders/dist/migrate.js` applies both.
-- No unique constraint on order_id, on purpose: the exactly-once handler, not a constraint,
-- keeps a redelivered entry from writing its order twice (and the e2e test can see a double).
-- Add one in your app if producers may publish the same order twice (docs/exactly-once.md).
CREATE TABLE IF NOT EXISTS orders (
  id bigserial PRIMARY KEY,
  order_id text NOT NULL,
  customer_id text NOT NULL,
  amount_cents integer NOT NULL,
  stream_entry_id text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
