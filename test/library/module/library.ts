/** What the module tests use from the library: its public package entry point. */
export * from '@redis-stream-coordinator/nestjs';
