import {
  BadRequestException,
  type CallHandler,
  Controller,
  type ExecutionContext,
  Injectable,
  type NestInterceptor,
  type INestApplicationContext,
  ParseArrayPipe,
  UseGuards,
  UseInterceptors,
  ValidationPipe,
} from '@nestjs/common';
import type { Observable } from 'rxjs';
import { Type } from 'class-transformer';
import { IsInt, IsString, Min, ValidateNested } from 'class-validator';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeEntry } from '../../../libs/stream-coordinator/src/data-plane/entry-codec.js';
import { JSON_PAYLOAD_SERIALIZER } from '../../../libs/stream-coordinator/src/data-plane/json-payload.serializer.js';
import type { StreamShardContext as Context } from '../../../libs/stream-coordinator/src/context/stream-shard.context.js';
import { UndecodableEntryError } from '../../../libs/stream-coordinator/src/errors/data-plane/undecodable-entry.error.js';
import { bootContext, shardContext } from './fixtures.js';
import {
  ShardMessage,
  StreamHandlerRegistry,
  StreamShardHandler,
  type StreamShardMessage,
} from './library.js';

// Nest's ValidationPipe (class-transformer's plainToInstance, then class-validator) on the whole
// message, as the README suggests, fed what the reader really hands over: a message decoded from
// a stream entry, whose payload is decoded when first read (a getter on the message's class). On
// the pipeline path the chain gets a plain copy with every field as an own property, so a copy by
// own keys (plainToInstance, a spread, structuredClone) keeps the payload; the payload is decoded
// when the call starts, and one that does not decode is recorded on the message, where the
// reader looks, even if nothing reads it.

class Order {
  @IsString()
  orderId!: string;

  @IsInt()
  @Min(1)
  total!: number;
}

class OrderMessage {
  @IsString()
  id!: string;

  @IsString()
  key!: string;

  @ValidateNested()
  @Type(() => Order)
  payload!: Order;
}

/** One decoded entry, as a shard reader builds it from an `XREADGROUP` reply. */
function decoded(payload: string, id = '1700000000000-1'): StreamShardMessage {
  return decodeEntry(
    id,
    [Buffer.from('key'), Buffer.from('customer-7'), Buffer.from('payload'), Buffer.from(payload)],
    1,
    'orders',
    3,
    JSON_PAYLOAD_SERIALIZER,
  );
}

const apps: INestApplicationContext[] = [];
afterEach(async () => {
  await Promise.all(apps.splice(0).map((app) => app.close()));
});

async function invokeWith(
  controller: new (...args: never[]) => unknown,
  message: StreamShardMessage,
): Promise<unknown> {
  const app = await bootContext({ controllers: [controller] });
  apps.push(app);
  const definition = app.get(StreamHandlerRegistry).get('orders');
  if (definition === undefined) throw new Error('no handler for orders');
  return definition.invoke(message, shardContext(message));
}

describe('e2e: ValidationPipe on a decoded message', () => {
  it('validates and transforms the payload, and keeps every field of the message', async () => {
    const seen: unknown[] = [];
    @Controller()
    class Handlers {
      @StreamShardHandler('orders')
      handle(
        @ShardMessage(new ValidationPipe({ expectedType: OrderMessage, transform: true }))
        message: OrderMessage & StreamShardMessage,
      ): void {
        seen.push(message);
      }
    }
    await invokeWith(Handlers, decoded('{"orderId":"o-1","total":3}'));
    expect(seen).toHaveLength(1);
    const message = seen[0] as OrderMessage & StreamShardMessage;
    expect(message).toBeInstanceOf(OrderMessage);
    expect(message.payload).toBeInstanceOf(Order);
    expect(message.payload).toEqual({ orderId: 'o-1', total: 3 });
    expect([message.id, message.stream, message.shard, message.key]).toEqual([
      '1700000000000-1',
      'orders',
      3,
      'customer-7',
    ]);
    expect(message.deliveryCount).toBe(1);
    expect(message.headers).toEqual({});
    expect(new Date(message.publishedAt).getTime()).toBe(1_700_000_000_000);
  });

  it('refuses a payload that does not validate (BadRequestException), with the field named', async () => {
    @Controller()
    class Handlers {
      @StreamShardHandler('orders')
      handle(@ShardMessage(new ValidationPipe({ expectedType: OrderMessage })) _m: unknown): void {}
    }
    const refused = invokeWith(Handlers, decoded('{"orderId":"o-1","total":0}'));
    await expect(refused).rejects.toBeInstanceOf(BadRequestException);
    await expect(refused).rejects.toMatchObject({
      response: { message: ['payload.total must not be less than 1'] },
    });
  });

  it('a payload that does not decode: the call fails and the message records why', async () => {
    let called = 0;
    @Controller()
    class Handlers {
      @StreamShardHandler('orders')
      handle(@ShardMessage(new ValidationPipe({ expectedType: OrderMessage })) _m: unknown): void {
        called++;
      }
    }
    const message = decoded('not json{');
    await expect(invokeWith(Handlers, message)).rejects.toBeInstanceOf(UndecodableEntryError);
    expect(called).toBe(0);
    // (what the reader looks at to dead-letter it as undecodable)
    expect((message as { payloadError?: unknown }).payloadError).toBeInstanceOf(
      UndecodableEntryError,
    );
  });

  it('an interceptor that copies getData() by its own keys keeps the payload', async () => {
    const copies: unknown[] = [];
    @Injectable()
    class CopyingInterceptor implements NestInterceptor {
      intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
        const data = context.switchToRpc().getData<StreamShardMessage>();
        copies.push({ ...data }, structuredClone(data), JSON.parse(JSON.stringify(data)));
        return next.handle();
      }
    }
    @Controller()
    class Handlers {
      @StreamShardHandler('orders')
      @UseInterceptors(CopyingInterceptor)
      handle(): void {}
    }
    await invokeWith(Handlers, decoded('{"orderId":"o-1","total":3}'));
    expect(copies).toHaveLength(3);
    for (const copy of copies) {
      expect(copy).toMatchObject({
        id: '1700000000000-1',
        key: 'customer-7',
        payload: { orderId: 'o-1', total: 3 },
      });
    }
  });

  it('a guarded handler that never reads the payload: an undecodable one is still recorded', async () => {
    let called = 0;
    @Injectable()
    class Allow {
      canActivate(): boolean {
        return true;
      }
    }
    @Controller()
    class Handlers {
      @StreamShardHandler('orders')
      @UseGuards(Allow)
      handle(@ShardMessage('key') _key: string): void {
        called++;
      }
    }
    const message = decoded('not json{');
    await invokeWith(Handlers, message);
    expect(called).toBe(1);
    expect((message as { payloadError?: unknown }).payloadError).toBeInstanceOf(
      UndecodableEntryError,
    );
  });

  it('a batch handler: ParseArrayPipe validates each decoded message', async () => {
    const seen: unknown[] = [];
    @Controller()
    class Handlers {
      @StreamShardHandler('orders', { batch: { maxSize: 10 } })
      handle(
        @ShardMessage(new ParseArrayPipe({ items: OrderMessage }))
        messages: OrderMessage[],
      ): void {
        seen.push(...messages);
      }
    }
    const app = await bootContext({ controllers: [Handlers] });
    apps.push(app);
    const invokeBatch = app.get(StreamHandlerRegistry).get('orders')?.invokeBatch;
    if (invokeBatch === undefined) throw new Error('no batch handler for orders');
    const messages = [
      decoded('{"orderId":"o-1","total":3}', '1700000000000-1'),
      decoded('{"orderId":"o-2","total":4}', '1700000000000-2'),
    ];
    await invokeBatch(messages, shardContext(messages[0] as StreamShardMessage) as Context);
    expect(seen.map((m) => (m as OrderMessage).payload)).toEqual([
      { orderId: 'o-1', total: 3 },
      { orderId: 'o-2', total: 4 },
    ]);
    expect(seen.every((m) => m instanceof OrderMessage)).toBe(true);
    await expect(
      invokeBatch(
        [decoded('{"orderId":"o-3","total":"x"}')],
        shardContext(messages[0] as StreamShardMessage) as Context,
      ),
    ).rejects.toBeInstanceOf(BadRequestException);
  });
});
