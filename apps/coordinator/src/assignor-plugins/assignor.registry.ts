import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import { DiscoveryService } from '@nestjs/core';
import { COORDINATOR_CONFIG } from '../config/config.tokens.js';
import type { CoordinatorConfig } from '../config/coordinator-config.js';
import { assignorRegistry } from '../core/assignors/builtin-assignors.js';
import type { ShardAssignor } from '../core/assignors/shard-assignor.interface.js';
import { InvalidConfigError } from '../config/invalid-config.error.js';
import { SHARD_ASSIGNOR_PROVIDER } from './shard-assignor-provider.decorator.js';

/**
 * The assignors this coordinator offers: the built-ins (`uniform`, `range`) plus every provider
 * marked with `@ShardAssignorProvider()`, found at bootstrap. The map is filled in place, so the
 * protocol rules that hold it see the custom ones too.
 */
@Injectable()
export class AssignorRegistry implements OnModuleInit {
  readonly assignors = new Map<string, ShardAssignor>(assignorRegistry());

  constructor(
    private readonly discovery: DiscoveryService,
    @Inject(COORDINATOR_CONFIG) private readonly config: CoordinatorConfig,
  ) {}

  onModuleInit(): void {
    const custom: ShardAssignor[] = [];
    for (const wrapper of this.discovery.getProviders()) {
      const { instance, metatype } = wrapper;
      if (!instance || !metatype || !Reflect.getMetadata(SHARD_ASSIGNOR_PROVIDER, metatype))
        continue;
      const candidate = instance as Partial<ShardAssignor>;
      if (typeof candidate.name !== 'string' || typeof candidate.assign !== 'function') {
        throw new InvalidConfigError([
          `${metatype.name} is marked @ShardAssignorProvider() but does not implement ShardAssignor (a string "name" and an "assign(input)" method)`,
        ]);
      }
      custom.push(candidate as ShardAssignor);
    }
    const all = assignorRegistry(custom);
    this.assignors.clear();
    for (const [name, a] of all) this.assignors.set(name, a);
    if (!this.assignors.has(this.config.defaultAssignor)) {
      throw new InvalidConfigError([
        `DEFAULT_ASSIGNOR "${this.config.defaultAssignor}" is not a configured assignor (have: ${[...this.assignors.keys()].join(', ')})`,
      ]);
    }
  }
}
