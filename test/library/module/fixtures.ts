import type { INestApplicationContext } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { VALID_OPTIONS } from './bad-options.cases.js';
import {
  StreamCoordinatorModule,
  type StreamCoordinatorModuleOptions,
  StreamHandlerRegistry,
  StreamShardContext,
  type StreamShardMessage,
} from './library.js';

type ModuleMetadata = Parameters<typeof Test.createTestingModule>[0];

/** A message as the runtime would hand it over. */
export function shardMessage<T>(
  payload: T,
  overrides: Partial<StreamShardMessage<T>> = {},
): StreamShardMessage<T> {
  return {
    id: '1700000000000-0',
    stream: 'orders',
    shard: 3,
    key: 'customer-7',
    payload,
    headers: {},
    deliveryCount: 1,
    publishedAt: new Date(1_700_000_000_000),
    ...overrides,
  };
}

/** The context the runtime would build for a message. */
export function shardContext(
  message: StreamShardMessage,
  memberId = 'member-1',
): StreamShardContext {
  return new StreamShardContext(message, VALID_OPTIONS.group, memberId);
}

/**
 * Invokes the handler of a stream through the registry, as the runtime does (a synchronous
 * completion or throw becomes a resolved or rejected promise here).
 */
export async function invoke(
  app: INestApplicationContext,
  stream: string,
  message: StreamShardMessage,
): Promise<void> {
  const definition = app.get(StreamHandlerRegistry).get(stream);
  if (definition === undefined) throw new Error(`no handler for ${stream}`);
  await definition.invoke(message, shardContext(message));
}

/** Compiles and initialises an application context with the module and the given metadata. */
export async function bootContext(
  metadata: ModuleMetadata,
  options: Partial<StreamCoordinatorModuleOptions> = {},
): Promise<INestApplicationContext> {
  const moduleRef = await Test.createTestingModule({
    ...metadata,
    imports: [
      StreamCoordinatorModule.forRoot({ ...VALID_OPTIONS, ...options }),
      ...(metadata.imports ?? []),
    ],
  }).compile();
  moduleRef.useLogger(false);
  try {
    return await moduleRef.init();
  } catch (error) {
    await moduleRef.close();
    throw error;
  }
}
