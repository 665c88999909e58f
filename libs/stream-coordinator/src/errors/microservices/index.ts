export * from './client-proxy-not-connected.error.js';
export * from './transport-events-unsupported.error.js';
export * from './transport-not-listening.error.js';
