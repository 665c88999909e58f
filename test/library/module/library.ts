/**
 * What the module tests use from the library: its public package entry point, plus the internals
 * they inspect (the handler registry, the resolved options, errors applications never catch).
 */
export * from '@redis-stream-coordinator/nestjs';
export {
  DuplicateStreamHandlerError,
  EmptyFilterResultError,
  ForbiddenHandlerError,
  InjectStreamCoordinatorOptions,
  InvalidStreamHandlerError,
  STREAM_COORDINATOR_OPTIONS,
  ShutdownOrderError,
  StreamHandlerRegistry,
  type ResolvedStreamCoordinatorOptions,
} from '@redis-stream-coordinator/nestjs/internal';
