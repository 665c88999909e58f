import { InvalidStreamHandlerError } from '../errors/invalid-stream-handler.error.js';
import { SHARD_CONTEXT_PARAMS_METADATA } from '../constants/stream-coordinator.constants.js';
import { NOT_A_HANDLER_PARAMETER } from '../constants/stream-coordinator.messages.js';

/**
 * Injects the `StreamShardContext` (stream, shard, key, id, delivery count, group, member id)
 * into a `@StreamShardHandler` parameter. Pipes never run on it, as with `@Ctx()` in
 * `@nestjs/microservices`.
 *
 * @publicApi
 */
export function ShardContext(): ParameterDecorator {
  return (target, key, index) => {
    if (key === undefined) {
      const className = typeof target === 'function' ? target.name : target.constructor.name;
      throw new InvalidStreamHandlerError(
        className,
        'constructor',
        NOT_A_HANDLER_PARAMETER('@ShardContext()'),
      );
    }
    const host = target.constructor;
    const existing = (Reflect.getMetadata(SHARD_CONTEXT_PARAMS_METADATA, host, key) ??
      []) as number[];
    Reflect.defineMetadata(SHARD_CONTEXT_PARAMS_METADATA, [...existing, index], host, key);
  };
}
