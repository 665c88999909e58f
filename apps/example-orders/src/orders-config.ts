/** The orders example's settings, all from the environment (docs/exactly-once.md lists them). */
export interface OrdersConfig {
  readonly coordinatorUrl: string;
  readonly token: string | undefined;
  readonly redisUrl: string;
  readonly group: string;
  /** The PostgreSQL that holds `orders` and the offsets table. */
  readonly databaseUrl: string;
  /** HTTP port of `/health/ready` (0 = any free port). */
  readonly port: number;
}

/** Reads the settings; throws with the variable's name on a missing or bad value. */
export function loadOrdersConfig(env: NodeJS.ProcessEnv = process.env): OrdersConfig {
  const databaseUrl = env.DATABASE_URL;
  if (!databaseUrl) {
    throw new Error('DATABASE_URL must name the PostgreSQL that holds the orders table');
  }
  const port = Number(env.PORT ?? 7700);
  if (!Number.isInteger(port) || port < 0) {
    throw new Error(`PORT must be a non-negative integer (got ${JSON.stringify(env.PORT)})`);
  }
  return {
    coordinatorUrl: env.COORDINATOR_URL ?? 'http://127.0.0.1:7400',
    token: env.COORDINATOR_TOKEN,
    redisUrl: env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    group: env.GROUP ?? 'orders-writer',
    databaseUrl,
    port,
  };
}
