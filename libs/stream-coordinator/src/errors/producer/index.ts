export * from './invalid-routing.error.js';
export * from './publish-argument.error.js';
export * from './publish.error.js';
export * from './routing-fetch.error.js';
export * from './stale-routing.error.js';
