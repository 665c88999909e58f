export * from './create-redis-connection.js';
export * from './lua-script.js';
export * from '../errors/redis/redis-connection-options.error.js';
export type * from './redis-connection.types.js';
