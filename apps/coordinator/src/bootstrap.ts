import { ConsoleLogger, type LogLevel, Logger, type ModuleMetadata } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { FastifyAdapter, type NestFastifyApplication } from '@nestjs/platform-fastify';
import type { CoordinatorConfig } from './config/coordinator-config.js';
import { CoordinatorAppModule } from './coordinator-app.module.js';
import { fastifyTrustProxy } from './config/trust-proxy.js';
import { registerAccessLog, requestIdOptions } from './http/access-log.js';
import { MAX_PATH_PARAM_LENGTH, renderFrameworkError } from './http/framework-error.handler.js';
import { MAX_BODY_BYTES, edgeServerOptions, hardenHttp } from './http/http-edge.js';
import { CoordinatorMetrics } from './metrics/coordinator-metrics.js';
import { ServingState } from './health/serving-state.js';
import { startupGate } from './health/startup-gate.js';
import { GROUP_COORDINATOR } from './groups/groups.tokens.js';
import { GROUP_STORE, STREAM_REGISTRY } from './store/store.tokens.js';
import type { GroupCoordinator } from './groups/group-coordinator.js';
import type { GroupStore } from './store/group-store.js';
import type { StreamRegistry } from './store/stream-registry.js';

const LEVELS: Record<CoordinatorConfig['logLevel'], LogLevel[]> = {
  error: ['fatal', 'error'],
  warn: ['fatal', 'error', 'warn'],
  log: ['fatal', 'error', 'warn', 'log'],
  debug: ['fatal', 'error', 'warn', 'log', 'debug'],
  verbose: ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'],
};

/**
 * Creates the coordinator application (not yet listening): Fastify hardened at the edge
 * (authentication before the body is read, rate and overload limits), bodies kept raw for the
 * edge validation, shutdown hooks on, metrics bound to the live group state, every route but
 * `/health/*` answering 503 until the start-up that needs Redis completed (`CoordinatorStartup`,
 * which runs in the background once the app is initialised).
 */
export async function createCoordinatorApp(
  config: CoordinatorConfig,
  extra: Pick<ModuleMetadata, 'imports' | 'providers'> = {},
): Promise<NestFastifyApplication> {
  const adapter = new FastifyAdapter({
    ...edgeServerOptions(config),
    ...requestIdOptions(),
    trustProxy: fastifyTrustProxy(config.trustProxy),
    routerOptions: { maxParamLength: MAX_PATH_PARAM_LENGTH },
    frameworkErrors: renderFrameworkError,
  });
  const fastify = adapter.getInstance();
  registerAccessLog(fastify);
  hardenHttp(fastify, config);
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser(
    '*',
    { parseAs: 'buffer', bodyLimit: MAX_BODY_BYTES },
    (_req, body, done) => {
      done(null, body);
    },
  );
  const app = await NestFactory.create<NestFastifyApplication>(
    CoordinatorAppModule.forRoot(config, extra),
    adapter,
    {
      bodyParser: false,
      logger: new ConsoleLogger({
        logLevels: LEVELS[config.logLevel],
        json: config.logFormat === 'json',
        // the access log's fields (request id, status, …) become fields of the JSON record
        flattenParams: true,
      }),
    },
  );
  app.enableShutdownHooks();
  fastify.addHook('onRequest', startupGate(app.get(ServingState)));
  const coordinator = app.get<GroupCoordinator>(GROUP_COORDINATOR);
  const store = app.get<GroupStore>(GROUP_STORE);
  const registry = app.get<StreamRegistry>(STREAM_REGISTRY);
  app.get(CoordinatorMetrics).bind({
    catalog: registry,
    async groups() {
      const ids = await store.listGroupIds();
      const out = [];
      for (const id of ids) {
        const g = await coordinator.read(id);
        if (g.exists) out.push(g.state);
      }
      return out;
    },
  });
  return app;
}

/**
 * Creates the app and listens on the configured host and port at once; the start-up that needs
 * Redis runs in the background (`CoordinatorStartup.completed()` says when it is over).
 */
export async function startCoordinator(config: CoordinatorConfig): Promise<NestFastifyApplication> {
  const app = await createCoordinatorApp(config);
  await app.listen(config.port, config.host);
  if (config.auth === 'none') {
    new Logger('Coordinator').warn(
      'COORDINATOR_AUTH=none: every request is treated as admin (local development only)',
    );
  }
  new Logger('Coordinator').log(`listening on ${await app.getUrl()}`);
  return app;
}
