export * from './compiled-routing.js';
export type * from './publish-options.interface.js';
export * from './routing-cache.js';
export type * from '../interfaces/routing-source.interface.js';
export * from './scripts/publish.script.js';
export * from './stream-publisher.js';
export * from '../errors/producer/index.js';
