// Makes this repository's code run against ioredis 5: `node --import ./scripts/ioredis5/register.mjs`
// or, so that child processes inherit it, NODE_OPTIONS="--import=<absolute file URL of this file>"
// (scripts/with-node.sh does this when RSC_IOREDIS=5). Uses the synchronous module.registerHooks
// where Node has it (22.15+, also covers require()), else module.register (Node 20: ESM imports,
// which is how this repository's code imports ioredis).
import * as nodeModule from 'node:module';
import { resolve } from './resolve-hook.mjs';

if (typeof nodeModule.registerHooks === 'function') {
  nodeModule.registerHooks({ resolve });
} else {
  nodeModule.register('./resolve-hook.mjs', import.meta.url);
}
