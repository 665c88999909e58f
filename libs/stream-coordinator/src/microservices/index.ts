export * from './stream-coordinator.transport.js';
export * from './stream-coordinator.client-proxy.js';
export * from '../errors/microservices/index.js';
