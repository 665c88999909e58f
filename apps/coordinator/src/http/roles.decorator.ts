import { FASTIFY_ROUTE_CONFIG_METADATA } from '@nestjs/platform-fastify/constants.js';

/**
 * Roles of the coordinator API (docs/protocol.md §2.2), each one including the ones before it:
 * `viewer` reads, `member` also heartbeats and leaves, `admin` may do everything. `metrics` is the
 * scrape of `GET /metrics`: public unless `METRICS_TOKEN` is set.
 */
export type ApiRole = 'viewer' | 'member' | 'admin' | 'metrics';

/** What a route needs: a role, or nothing (public). Every route declares one (deny by default). */
export type RouteAccess = { readonly public: true } | { readonly role: ApiRole };

/** Key of a route's {@link RouteAccess} in its Fastify route config. */
export const ROUTE_ACCESS = 'coordinatorAccess';

type AccessDecorator = MethodDecorator & ClassDecorator;

/**
 * Marks the role a route needs. On a class, it applies to every handler that has no decision of
 * its own. Routes without {@link RequireRole} or {@link Public} stop the app at start.
 */
export const RequireRole = (role: ApiRole): AccessDecorator => decide({ role });

/** Marks a route public: no token needed (health, docs, the dashboard's static page). */
export const Public = (): AccessDecorator => decide({ public: true });

function decide(access: RouteAccess): AccessDecorator {
  return ((target: object, _key?: string | symbol, descriptor?: PropertyDescriptor) => {
    if (descriptor) {
      mark(descriptor.value, access, true);
      return descriptor;
    }
    const proto = (target as { prototype: Record<string, unknown> }).prototype;
    for (const name of Object.getOwnPropertyNames(proto)) {
      const handler = proto[name];
      if (name !== 'constructor' && typeof handler === 'function') mark(handler, access, false);
    }
    return undefined;
  }) as AccessDecorator;
}

/** Puts the decision into the Fastify route config, where the `onRequest` hook reads it. */
function mark(handler: unknown, access: RouteAccess, override: boolean): void {
  const target = handler as object;
  const config = (Reflect.getMetadata(FASTIFY_ROUTE_CONFIG_METADATA, target) ?? {}) as Record<
    string,
    unknown
  >;
  if (!override && config[ROUTE_ACCESS] !== undefined) return;
  Reflect.defineMetadata(
    FASTIFY_ROUTE_CONFIG_METADATA,
    { ...config, [ROUTE_ACCESS]: access },
    target,
  );
}
