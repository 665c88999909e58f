import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import { of } from 'rxjs';
import { describe, expect, it } from 'vitest';
import { STREAM_SHARD_CONTEXT_TYPE } from '../context/stream-shard.context.js';
import { ExactlyOnceBatchError } from '../errors/postgres/exactly-once-batch.error.js';
import { ExactlyOnceInterceptor } from './exactly-once.interceptor.js';
import type { PostgresExactlyOnce } from './postgres-exactly-once.js';

describe('ExactlyOnceInterceptor', () => {
  it('refuses a batch before anything is written (review finding B)', () => {
    let applied = 0;
    const exactlyOnce = {
      apply: () => {
        applied++;
        return Promise.resolve({ applied: true, result: undefined });
      },
    } as unknown as PostgresExactlyOnce;
    const context = new ExecutionContextHost([[{ id: '1-0' }, { id: '2-0' }], {}]);
    context.setType(STREAM_SHARD_CONTEXT_TYPE);
    let called = 0;
    const next = {
      handle: () => {
        called++;
        return of(undefined);
      },
    };
    expect(() => new ExactlyOnceInterceptor(exactlyOnce).intercept(context, next)).toThrow(
      ExactlyOnceBatchError,
    );
    expect([applied, called]).toEqual([0, 0]);
  });
});
