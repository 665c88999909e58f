import { createHash } from 'node:crypto';
import { DASHBOARD_CSS, DASHBOARD_JS } from './dashboard-assets.js';

const sha256 = (text: string): string =>
  `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

/** The `/ui` page: a static shell; every piece of data is fetched by its script with a viewer (or member, admin) token. */
export const DASHBOARD_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Redis Stream Coordinator</title>
<link rel="icon" href="data:,">
<style>${DASHBOARD_CSS}</style>
</head>
<body>
<header>
  <h1>Redis Stream Coordinator</h1>
  <span id="status" class="status">connecting…</span>
  <button id="logout" type="button">forget token</button>
</header>
<div id="login" class="hidden">
  <section>
    <h2>Token</h2>
    <form id="login-form">
      <p>The dashboard reads the coordinator with a read-only viewer token (<code>COORDINATOR_VIEWER_TOKEN</code>; member and admin tokens work too). It is kept in this tab only.</p>
      <input id="token-input" type="password" autocomplete="off" placeholder="viewer token" aria-label="viewer token">
      <button type="submit">Open</button>
      <p id="login-error" class="error"></p>
    </form>
  </section>
</div>
<main id="app" class="hidden">
  <aside>
    <section><h2>Groups</h2><div id="groups"></div></section>
    <section><h2>Streams</h2><div id="streams"></div></section>
  </aside>
  <div>
  <div id="group-panel" class="hidden">
    <section><h2 id="group-title">Group</h2><div id="summary" class="summary"></div></section>
    <section><h2>Members</h2><table id="members"></table></section>
    <section>
      <h2>Shard ownership</h2>
      <p class="legend"><span class="cell-owned">● owned</span><span class="cell-revoking">⇣ revoking</span><span class="cell-awaiting">◐ awaiting release</span><span class="cell-pending">○ pending pick-up</span></p>
      <table id="grid" class="grid"></table>
    </section>
    <section id="reshard-section" class="hidden"><h2>Reshard progress</h2><div id="reshards"></div></section>
    <section><h2>Rebalance timeline (event log, newest first)</h2><ul id="timeline" class="timeline"></ul></section>
  </div>
  <section id="dlq-panel" class="hidden">
    <h2 id="dlq-title">Dead letters</h2>
    <p class="muted">Not yet replayed, oldest first (50 at most). Replay re-publishes a message by its key through the current routing, once per entry (docs/operations.md, "Dead letters").</p>
    <p><button id="dlq-replay-all" type="button">replay all listed</button> <button id="dlq-close" type="button">close</button> <span id="dlq-result" class="muted"></span></p>
    <table id="dead-letters"></table>
  </section>
  </div>
</main>
<script>${DASHBOARD_JS}</script>
</body>
</html>
`;

/**
 * The page's Content-Security-Policy: only its own inline script and style (by hash), requests
 * to this origin, nothing else.
 */
export const DASHBOARD_CSP = [
  "default-src 'none'",
  `script-src ${sha256(DASHBOARD_JS)}`,
  `style-src ${sha256(DASHBOARD_CSS)}`,
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
