// Module resolve hook: `ioredis` (and `ioredis/...`) imported by this repository's own code —
// the library, the apps, the tests, the bench — resolves to the `ioredis5` devDependency
// (`npm:ioredis@5.x`) instead of the root `ioredis` (6.x). Packages under node_modules and code
// outside this repository keep their own resolution. An already resolved path or URL into the
// root node_modules/ioredis (Vitest resolves bare imports itself before importing them) is
// redirected the same way. Registered by ./register.mjs; see README.md, "Node.js and ioredis".

const ROOT_URL = new URL('../../', import.meta.url).href;
const ROOT_PATH = decodeURIComponent(new URL(ROOT_URL).pathname);

/** Whether a module at `parentURL` is this repository's own code (not a dependency). */
function isOwnCode(parentURL) {
  if (parentURL === undefined) return true;
  if (!parentURL.startsWith(ROOT_URL)) return false;
  return !parentURL.slice(ROOT_URL.length).includes('node_modules/');
}

/** @param {string} specifier @param {string | undefined} parentURL */
function redirect(specifier, parentURL) {
  if (specifier === 'ioredis' || specifier.startsWith('ioredis/')) {
    return isOwnCode(parentURL) ? `ioredis5${specifier.slice('ioredis'.length)}` : specifier;
  }
  for (const root of [ROOT_URL, ROOT_PATH]) {
    if (specifier.startsWith(`${root}node_modules/ioredis/`)) {
      return `${root}node_modules/ioredis5/${specifier.slice(`${root}node_modules/ioredis/`.length)}`;
    }
  }
  return specifier;
}

/**
 * The `resolve` hook, for `module.registerHooks` (synchronous) and `module.register`
 * (asynchronous): it only rewrites the specifier and returns what the next hook returns.
 */
export function resolve(specifier, context, nextResolve) {
  return nextResolve(redirect(specifier, context.parentURL), context);
}
