/**
 * Dependency rules: `npm run lint` runs them (`npm run deps`), so `npm test` fails on a new cycle
 * or a forbidden import. The map they enforce is in docs/architecture.md ("Where things go").
 * Tests (test/, *.spec.ts) are not checked.
 *
 * @type {import('dependency-cruiser').IConfiguration}
 */
const APP = '^apps/coordinator/src/';
const LIB = '^libs/stream-coordinator/src/';
const CLI = '^libs/stream-coordinator/cli/';

/**
 * The coordinator's folders, lowest layer first. A folder may import its own files and any folder
 * of a lower layer, never one of its own layer or above. The files at the root of src/ (main,
 * bootstrap, the app module) assemble everything and may import any folder.
 */
const APP_LAYERS = [
  ['core', 'config'],
  ['redis'],
  ['store'],
  ['key-layout', 'http', 'assignor-plugins'],
  ['metrics'],
  ['groups'],
  ['streams'],
  ['health', 'projections', 'docs'],
  ['ui'],
];

/**
 * The library's folders, lowest layer first, under the same rule. The files at the root of src/
 * (index.ts, the package's main entry point) may import any folder.
 */
const LIB_LAYERS = [
  ['protocol', 'constants'],
  ['identity', 'errors'],
  ['interfaces'],
  ['redis', 'context'],
  ['data-plane'],
  ['options'],
  ['decorators'],
  ['discovery'],
  ['runtime'],
  ['producer', 'metrics', 'health'],
  ['dead-letters'],
  ['module', 'microservices', 'internal', 'postgres'],
];

/** One rule per folder of `layers` (under `root`): it imports its own files and lower layers. */
function layerRules(prefix, root, layers, what) {
  return layers.flatMap((layer, index) => {
    const below = layers.slice(0, index).flat();
    return layer.map((folder) => ({
      name: `${prefix}-${folder}`,
      severity: 'error',
      comment: `${folder}/ may import ${below.length ? below.join(', ') : `no other folder of ${what}`} (docs/architecture.md)`,
      from: { path: `${root}${folder}/` },
      to: {
        path: root,
        pathNot: `${root}(${[folder, ...below].join('|')})/`,
      },
    }));
  });
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular-folders',
      severity: 'error',
      comment:
        'Two folders import each other, directly or through others: move the shared piece down.',
      scope: 'folder',
      from: {},
      to: { circular: true },
    },
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'Two files import each other, directly or through others.',
      from: {},
      to: { circular: true },
    },
    ...layerRules('layer', APP, APP_LAYERS, 'the app'),
    {
      name: 'layer-unlisted',
      severity: 'error',
      comment:
        'A new folder of the coordinator takes a place in APP_LAYERS (and docs/architecture.md).',
      from: { path: `${APP}[^/]+/`, pathNot: `${APP}(${APP_LAYERS.flat().join('|')})/` },
      to: {},
    },
    ...layerRules('lib-layer', LIB, LIB_LAYERS, 'the library'),
    {
      name: 'lib-layer-unlisted',
      severity: 'error',
      comment:
        'A new folder of the library takes a place in LIB_LAYERS (and docs/architecture.md).',
      from: { path: `${LIB}[^/]+/`, pathNot: `${LIB}(${LIB_LAYERS.flat().join('|')})/` },
      to: {},
    },
    {
      name: 'core-is-pure',
      severity: 'error',
      comment: 'core/ decides without I/O or Nest: it imports only core/ and the library protocol.',
      from: { path: `${APP}core/` },
      to: { pathNot: [`${APP}core/`, `${LIB}protocol/`] },
    },
    {
      name: 'store-classes-are-plain',
      severity: 'error',
      comment:
        'store/ classes are plain (tests build them directly); only store.module.ts wires them into Nest.',
      from: { path: `${APP}store/`, pathNot: `${APP}store/store\\.module\\.ts$` },
      to: { path: '^@nestjs/|node_modules/@nestjs/' },
    },
    {
      name: 'app-uses-library-entry-points',
      severity: 'error',
      comment: 'The coordinator imports the library through its package entry points only.',
      from: { path: '^apps/' },
      to: {
        path: LIB,
        pathNot: `${LIB}(index|protocol/index|internal/index|microservices/index|health/index|metrics/index|postgres/index)\\.ts$`,
      },
    },
    {
      name: 'postgres-is-opt-in',
      severity: 'error',
      comment:
        'Only the /postgres entry point loads pg: apps without PostgreSQL never import it (docs/exactly-once.md).',
      from: { path: `${LIB}`, pathNot: `${LIB}postgres/` },
      to: { path: [`${LIB}postgres/`, 'node_modules/pg/', '^pg$'] },
    },
    {
      name: 'library-not-app',
      severity: 'error',
      comment: 'The library never imports an app.',
      from: { path: '^libs/' },
      to: { path: '^apps/' },
    },
    {
      name: 'protocol-is-pure',
      severity: 'error',
      comment: 'The library protocol is shared with the coordinator and the CLI: no Nest, no I/O.',
      from: { path: `${LIB}protocol/` },
      to: { pathNot: `${LIB}protocol/` },
    },
    {
      name: 'cli-uses-protocol-only',
      severity: 'error',
      comment:
        'The rsc CLI imports only itself, Node built-ins and the public protocol entry point.',
      from: { path: CLI },
      to: { dependencyTypesNot: ['core'], pathNot: [CLI, `${LIB}protocol/index\\.ts$`] },
    },
    {
      name: 'nothing-imports-cli',
      severity: 'error',
      comment: 'The CLI is an entry point of its own: neither the library nor the apps import it.',
      from: { pathNot: CLI },
      to: { path: CLI },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
    // Production code only: tests (test/, *.spec.ts) may import across layers.
    exclude: { path: ['(^|/)dist/', '^test/', '\\.spec\\.ts$'] },
  },
};
