import {
  Injectable,
  Module,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { ModulesContainer } from '@nestjs/core';
import { ShutdownOrderError } from '../errors/shutdown-order.error.js';

/** Something that must finish before any other provider of the application is torn down. */
export type DrainTask = () => Promise<void>;

/** Something that must start only once every other provider's `onApplicationBootstrap` ran. */
export type StartTask = () => void;

/**
 * Runs the drain of the member runtime before every other `onModuleDestroy` of the application.
 *
 * Nest runs the teardown hooks module by module in ascending distance from the root module, and a
 * global module (this library's) has the largest distance: every user module's `onModuleDestroy`
 * would run first, closing the database pools and clients that handlers still use. This provider
 * lives in a module of its own whose distance it sets below every other module's while the
 * application is being created (before Nest orders the modules for the hooks, at `init()`), so
 * its `onModuleDestroy` is the first teardown hook of the application — on `app.close()` and on a
 * signal with `enableShutdownHooks()` alike. It has no other teardown hook, so nothing else moves.
 *
 * The same order makes its `onApplicationBootstrap` the application's last start-up hook: Nest
 * runs the hooks module by module in descending distance and awaits each module's before the
 * next, so when it runs every other module's `onApplicationBootstrap` has completed (a database
 * module that opens its pool there is open). The member runtime starts consuming from it.
 *
 * Nest has no public API for "first teardown hook"; this relies on `Module.distance` (public on
 * Nest's module class) deciding the hook order from `init()` on. `onModuleInit` (which Nest runs
 * after it fixed that order) checks the module is still the nearest one and fails the bootstrap
 * with a {@link ShutdownOrderError} if not, so a Nest change makes this fail loudly, not silently.
 *
 * @internal
 */
@Injectable()
export class ShutdownDrain implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly tasks: DrainTask[] = [];
  private readonly starts: StartTask[] = [];
  private started = false;

  constructor(private readonly modules: ModulesContainer) {
    const { own, others } = this.partition();
    const lowest = Math.min(1, ...others.map((m) => m.distance));
    for (const m of own) {
      m.distance = lowest - 1;
      if (m.distance !== lowest - 1)
        throw new ShutdownOrderError(
          `Nest ignored the distance set on ${StreamCoordinatorDrainModule.name} (${lowest - 1}; reads ${m.distance})`,
        );
    }
  }

  /** Checks (once Nest fixed the hook order) that the drain module still comes first. */
  onModuleInit(): void {
    const { own, others } = this.partition();
    const highest = Math.max(...own.map((m) => m.distance));
    const before = others.filter((m) => m.distance <= highest);
    if (before.length > 0)
      throw new ShutdownOrderError(
        `module(s) ${before.map((m) => `${m.name} (distance ${m.distance})`).join(', ')} would be torn down before or with ${StreamCoordinatorDrainModule.name} (distance ${highest})`,
      );
  }

  private partition() {
    const all = [...this.modules.values()];
    return {
      own: all.filter((m) => m.metatype === StreamCoordinatorDrainModule),
      others: all.filter((m) => m.metatype !== StreamCoordinatorDrainModule),
    };
  }

  /** Registers a task the first teardown hook awaits (it must not reject: it logs its own failures). */
  register(task: DrainTask): void {
    this.tasks.push(task);
  }

  /**
   * Registers a task the last start-up hook runs, or runs it at once if that hook already ran
   * (it must not throw: it logs its own failures).
   */
  registerStart(task: StartTask): void {
    if (this.started) task();
    else this.starts.push(task);
  }

  /** Whether the application's last `onApplicationBootstrap` (this provider's) has run. */
  get bootstrapped(): boolean {
    return this.started;
  }

  /** The application's last `onApplicationBootstrap`: starts what waited for it. */
  onApplicationBootstrap(): void {
    this.started = true;
    for (const start of this.starts.splice(0)) start();
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.allSettled(this.tasks.map((task) => task()));
  }
}

/**
 * Holds {@link ShutdownDrain} (see there why it is a module of its own).
 *
 * @internal
 */
@Module({ providers: [ShutdownDrain], exports: [ShutdownDrain] })
export class StreamCoordinatorDrainModule {}
