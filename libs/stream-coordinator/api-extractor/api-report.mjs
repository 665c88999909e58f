// Checks (default) or updates (`--local`) the API reports in api/: one `<name>.api.md` per public
// entry point of package.json `exports` (`.` is `root`; `/internal` is not public and has none).
// It reads the built declarations (dist/**/*.d.ts), so build first (`npm run api:check` does).
//
//   npm run api:check    fails when an entry point's surface differs from its committed report
//   npm run api:update   rewrites the reports; review and commit the diff with the change
//
// A new entry point in `exports` (say `./postgres`) fails the check until `npm run api:update`
// writes api/postgres.api.md; a report whose entry point is gone fails it too.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CompilerState, Extractor, ExtractorConfig } from '@microsoft/api-extractor';

const LIBRARY = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const CONFIG = join(LIBRARY, 'api-extractor/api-extractor.json');
const REPORTS = join(LIBRARY, 'api');
/** Entry points that are not public: no report, no compatibility promise. */
const NOT_PUBLIC = new Set(['./internal', './package.json']);

const local = process.argv.includes('--local');
const started = performance.now();

/** `{ name, declarations }` of every public entry point, from package.json `exports`. */
function publicEntryPoints() {
  const manifest = JSON.parse(readFileSync(join(LIBRARY, 'package.json'), 'utf8'));
  return Object.entries(manifest.exports)
    .filter(([subpath]) => !NOT_PUBLIC.has(subpath))
    .map(([subpath, target]) => ({
      name: subpath === '.' ? 'root' : subpath.slice(2).replaceAll('/', '-'),
      declarations: join(LIBRARY, target.types),
    }));
}

const entryPoints = publicEntryPoints();
const problems = [];
const base = ExtractorConfig.loadFile(CONFIG);
const missing = entryPoints.filter(({ declarations }) => !existsSync(declarations));
if (missing.length > 0) {
  console.error(`api: ${missing.map((e) => e.declarations).join(', ')} missing: build first`);
  process.exit(1);
}
const configs = entryPoints.map(({ name, declarations }) =>
  ExtractorConfig.prepare({
    configObject: {
      ...base,
      mainEntryPointFilePath: declarations,
      apiReport: { ...base.apiReport, reportFileName: name },
    },
    configObjectFullPath: CONFIG,
    packageJsonFullPath: join(LIBRARY, 'package.json'),
  }),
);
// One TypeScript program for every entry point: analysing them one by one costs 5x the time.
const compilerState = CompilerState.create(configs[0], {
  additionalEntryPoints: entryPoints.map(({ declarations }) => declarations),
});
for (const [index, { name }] of entryPoints.entries()) {
  const result = Extractor.invoke(configs[index], {
    localBuild: local,
    compilerState,
    showVerboseMessages: false,
  });
  // Findings (ae-forgotten-export, …) go into the report itself; what API Extractor still counts
  // is a broken analysis, or, in CI mode, a report that differs from the committed one.
  if (result.errorCount > 0) {
    problems.push(`${name}: ${result.errorCount} errors`);
  } else if (local) {
    if (result.apiReportChanged) console.log(`api: updated api/${name}.api.md; review, commit`);
  } else if (result.apiReportChanged || result.warningCount > 0) {
    problems.push(`${name}: the public API differs from api/${name}.api.md`);
  }
}

const expected = new Set(entryPoints.map(({ name }) => `${name}.api.md`));
for (const file of readdirSync(REPORTS).filter((f) => f.endsWith('.api.md'))) {
  if (!expected.has(file)) {
    problems.push(`api/${file} belongs to no public entry point of package.json exports`);
  }
}

const seconds = ((performance.now() - started) / 1000).toFixed(1);
if (problems.length > 0) {
  console.error(`api: ${problems.length} problem(s) in ${seconds} s:\n  ${problems.join('\n  ')}`);
  if (!local) {
    console.error(
      'If the change is intended, run `npm run api:update`, review api/*.api.md and commit it ' +
        '(docs/releasing.md, "The public API").',
    );
  }
  process.exit(1);
}
console.log(`api: ${entryPoints.length} entry points match api/*.api.md (${seconds} s)`);
