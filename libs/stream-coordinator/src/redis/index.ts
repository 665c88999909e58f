export * from './create-reader-connection.js';
export * from './create-redis-connection.js';
export { DirectReaderClient, type DirectReaderStatus } from './direct/direct-reader-client.js';
export type { DirectReaderEndpoint } from './direct/direct-reader-endpoint.js';
export * from './lua-script.js';
export * from '../errors/redis/redis-connection-options.error.js';
export type * from './redis-connection.types.js';
