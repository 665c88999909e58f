import {
  type CallHandler,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
} from '@nestjs/common';
import { from, lastValueFrom, type Observable } from 'rxjs';
import { STREAM_SHARD_CONTEXT_TYPE, StreamShardContext } from '../context/stream-shard.context.js';
import { EXACTLY_ONCE_INTERCEPTOR_MARKER } from '../constants/stream-coordinator.constants.js';
import { ExactlyOnceBatchError } from '../errors/postgres/exactly-once-batch.error.js';
import { ExactlyOnceTransactionMissingError } from '../errors/postgres/exactly-once-transaction-missing.error.js';
import { PostgresExactlyOnce } from './postgres-exactly-once.js';
import { transactions } from './transaction-registry.js';

/**
 * The interceptor `@ExactlyOnce()` applies: wraps the handler call in
 * {@link PostgresExactlyOnce.apply}. An entry already applied is not handed to the handler; the
 * call resolves, so the library acknowledges it. With other interceptors on the method, write
 * `@ExactlyOnce()` above your `@UseInterceptors(…)`: Nest applies method decorators bottom-up
 * and runs the interceptor registered last innermost, so the transaction spans only the handler.
 * Class-level and global interceptors always run outside it.
 *
 * Prefer `@ExactlyOnce()` to applying this class yourself. Applied by `@UseInterceptors()` to a
 * key-ordered or batch handler it is refused at bootstrap, as `@ExactlyOnce()` is; given a batch
 * at run time (a global interceptor) it throws {@link ExactlyOnceBatchError}.
 *
 * @publicApi
 */
@Injectable()
export class ExactlyOnceInterceptor implements NestInterceptor {
  /** Lets the handler explorer refuse this interceptor where exactly-once cannot hold. */
  static readonly [EXACTLY_ONCE_INTERCEPTOR_MARKER] = true;

  constructor(private readonly exactlyOnce: PostgresExactlyOnce) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    // a batch has no single entry id to record: refuse it before anything is written
    if (Array.isArray(context.getArgByIndex<unknown>(0))) throw new ExactlyOnceBatchError();
    const shard = context.getArgByIndex<unknown>(1);
    if (
      context.getType<string>() !== STREAM_SHARD_CONTEXT_TYPE ||
      !(shard instanceof StreamShardContext)
    ) {
      throw new ExactlyOnceTransactionMissingError();
    }
    return from(this.run(shard, next));
  }

  private async run(shard: StreamShardContext, next: CallHandler): Promise<unknown> {
    try {
      const outcome = await this.exactlyOnce.apply(
        {
          group: shard.group,
          stream: shard.stream,
          shard: shard.shard,
          id: shard.id,
          memberId: shard.memberId,
        },
        (tx) => {
          transactions.set(shard, tx);
          return lastValueFrom(next.handle(), { defaultValue: undefined });
        },
      );
      return outcome.applied ? outcome.result : undefined;
    } finally {
      transactions.delete(shard);
    }
  }
}
