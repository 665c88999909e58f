/** Shortest bearer token the coordinator accepts (`openssl rand -hex 32` makes 64 characters). */
export const MIN_TOKEN_LENGTH = 16;

/**
 * Token values shipped in this repository's examples (README, docs, docker/compose.yml, the
 * Kubernetes secret): refused on purpose, so a copied example never guards a real deployment.
 */
const SHIPPED_PLACEHOLDERS: ReadonlySet<string> = new Set([
  'replace-me',
  'replace-me-member-token',
  'replace-me-admin-token',
  'replace-me-viewer-token',
  'replace-me-metrics-token',
  'dev-member-token',
  'dev-admin-token',
  'dev-viewer-token',
  'member-secret',
  'admin-secret',
  'changeme',
  'change-me',
]);

const TOKEN_VARIABLES = [
  'COORDINATOR_TOKEN',
  'COORDINATOR_ADMIN_TOKEN',
  'COORDINATOR_VIEWER_TOKEN',
  'METRICS_TOKEN',
] as const;

/** A token variable whose value is refused, and why. */
export interface TokenProblem {
  readonly variable: (typeof TOKEN_VARIABLES)[number];
  readonly message: string;
}

/**
 * Every configured token that is too short, a shipped placeholder, or also the token of another
 * role (the caller would get the strongest of the two: a scraper holding a member token could
 * heartbeat), naming its variable (the token itself is not echoed: it may be a real secret).
 */
export function tokenProblems(
  env: Readonly<Record<(typeof TOKEN_VARIABLES)[number], readonly string[]>>,
): TokenProblem[] {
  const problems: TokenProblem[] = [];
  const owners = new Map<string, (typeof TOKEN_VARIABLES)[number]>();
  for (const variable of TOKEN_VARIABLES) {
    env[variable].forEach((token, index) => {
      const owner = owners.get(token);
      if (owner !== undefined && owner !== variable) {
        problems.push({
          variable,
          message: `${variable} repeats a token of ${owner}: whoever holds it gets the stronger role of the two; give each role its own token`,
        });
        return;
      }
      owners.set(token, variable);
      const which = env[variable].length > 1 ? `${variable} (token ${index + 1})` : variable;
      if (isPlaceholder(token)) {
        problems.push({
          variable,
          message: `${which} is a placeholder shipped with the examples; generate a token, e.g. \`openssl rand -hex 32\``,
        });
      } else if (token.length < MIN_TOKEN_LENGTH) {
        problems.push({
          variable,
          message: `${which} is ${token.length} characters; tokens need at least ${MIN_TOKEN_LENGTH} (generate one with \`openssl rand -hex 32\`)`,
        });
      }
    });
  }
  return problems;
}

function isPlaceholder(token: string): boolean {
  const lower = token.toLowerCase();
  return SHIPPED_PLACEHOLDERS.has(lower) || lower.startsWith('replace-me');
}

/** True for a HOST that only loopback clients can reach. */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return h === 'localhost' || h === '::1' || h === '[::1]' || /^127(?:\.\d{1,3}){3}$/.test(h);
}
