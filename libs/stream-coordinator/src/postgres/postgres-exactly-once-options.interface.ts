import type { FactoryProvider, ModuleMetadata } from '@nestjs/common';
import type { Pool } from 'pg';

/**
 * Options of `PostgresExactlyOnceModule.forRoot`: where the offsets table lives, and the pool the
 * transactions come from. Give exactly one of `pool` and `connectionString`.
 *
 * @publicApi
 */
export interface PostgresExactlyOnceOptions {
  /**
   * The application's `pg` pool: the handlers' transactions are taken from it, so the effects
   * and the offsets share the database. The module does not end it.
   */
  pool?: Pool;
  /** Or a connection string: the module opens a pool of its own and ends it at shutdown. */
  connectionString?: string;
  /** Size of the module's own pool (with `connectionString`). Default 10. */
  maxConnections?: number;
  /**
   * The offsets table, `name` or `schema.name` (plain identifiers). Default
   * `rsc_applied_offsets`. See docs/exactly-once.md for its columns and migration.
   */
  table?: string;
  /**
   * Create the table (`CREATE TABLE IF NOT EXISTS`) at bootstrap. Default false: run the
   * migration (`createExactlyOnceTable` or the SQL file) as part of your own migrations.
   */
  createTable?: boolean;
}

/**
 * Options of `PostgresExactlyOnceModule.forRootAsync`: the options from a factory, with the
 * providers it injects (from `imports`), for a connection string or pool known only at bootstrap
 * (`ConfigService`). The factory's options are validated when the module is created, as
 * `forRoot`'s are.
 *
 * @publicApi
 */
export interface PostgresExactlyOnceAsyncOptions {
  /** Modules that export the providers `inject` names. */
  imports?: ModuleMetadata['imports'];
  /** Providers handed to `useFactory`, in order. */
  inject?: FactoryProvider['inject'];
  /** Returns (or resolves to) the options of `forRoot`, given the `inject` providers. */
  useFactory: (
    ...args: never[]
  ) => PostgresExactlyOnceOptions | Promise<PostgresExactlyOnceOptions>;
}
