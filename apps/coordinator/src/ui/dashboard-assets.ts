/**
 * The dashboard's stylesheet and script, served inline in `/ui` (no build step, no files to
 * ship: plain CSS and ES2017 JavaScript as strings). The script builds every element with
 * `textContent`, never `innerHTML`, so nothing from the coordinator is ever parsed as markup.
 */

/** The dashboard's CSS. */
export const DASHBOARD_CSS = String.raw`
:root { --bg: #f6f7f9; --panel: #fff; --ink: #1d2330; --muted: #667085; --line: #e3e6eb;
  --owned: #1f9d55; --revoking: #d97706; --awaiting: #2563eb; --pending: #98a2b3; --bad: #c0362c; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; background: var(--bg); color: var(--ink); }
header { display: flex; align-items: center; gap: 16px; padding: 10px 20px; background: #1d2330; color: #fff; }
header h1 { font-size: 16px; margin: 0; font-weight: 600; }
header .status { margin-left: auto; font-size: 12px; color: #c9ced8; }
header .status.error { color: #ffb4ab; }
header button { background: transparent; color: #c9ced8; border: 1px solid #4a5263; border-radius: 4px; padding: 3px 8px; cursor: pointer; }
main { display: grid; grid-template-columns: 260px 1fr; gap: 16px; padding: 16px 20px; }
section { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 12px 14px; margin-bottom: 16px; }
section h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .04em; color: var(--muted); margin: 0 0 8px; }
.group-item { display: flex; justify-content: space-between; width: 100%; text-align: left; border: 1px solid var(--line); background: #fff; border-radius: 4px; padding: 6px 8px; margin-bottom: 6px; cursor: pointer; font: inherit; }
.group-item.selected { border-color: var(--awaiting); box-shadow: 0 0 0 1px var(--awaiting) inset; }
.badge { display: inline-block; font-size: 11px; padding: 1px 6px; border-radius: 9px; background: #eef0f3; color: var(--muted); }
.badge.STABLE { background: #dcf3e5; color: var(--owned); }
.badge.RECONCILING, .badge.ASSIGNING, .badge.UNREVOKED_SHARDS, .badge.UNRELEASED_SHARDS { background: #fdf0db; color: var(--revoking); }
.badge.EMPTY, .badge.TEMPORARILY_LEFT { background: #eef0f3; color: var(--muted); }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { font-size: 12px; color: var(--muted); font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
.grid td.cell { text-align: center; min-width: 84px; font-size: 12px; }
.cell-owned { background: #dcf3e5; color: var(--owned); font-weight: 600; }
.cell-revoking { background: #fdf0db; color: var(--revoking); font-weight: 600; }
.cell-awaiting { background: #dbe7fd; color: var(--awaiting); }
.cell-pending { color: var(--pending); outline: 1px dashed var(--pending); outline-offset: -3px; }
.draining { color: var(--revoking); font-size: 11px; }
.summary { display: flex; flex-wrap: wrap; gap: 18px; }
.summary div span { display: block; font-size: 11px; color: var(--muted); }
.summary div b { font-size: 16px; }
.timeline { list-style: none; margin: 0; padding: 0; max-height: 360px; overflow: auto; font-size: 12px; }
.timeline li { padding: 3px 0; border-bottom: 1px dotted var(--line); }
.timeline .t { color: var(--muted); margin-right: 8px; font-variant-numeric: tabular-nums; }
.timeline .type { font-weight: 600; margin-right: 6px; }
.bar { height: 8px; background: #eef0f3; border-radius: 4px; overflow: hidden; margin: 4px 0; }
.bar > div { height: 100%; background: var(--awaiting); }
.muted { color: var(--muted); }
.legend span { margin-right: 12px; font-size: 12px; padding: 1px 6px; border-radius: 3px; }
button.link { border: none; background: none; color: var(--awaiting); padding: 0; cursor: pointer; font: inherit; font-size: 12px; }
#dead-letters td { max-width: 360px; overflow: hidden; text-overflow: ellipsis; }
#login { max-width: 420px; margin: 60px auto; }
#login input { width: 100%; padding: 6px 8px; margin: 8px 0; font: inherit; }
#login .error { color: var(--bad); }
.hidden { display: none !important; }
`;

/** The dashboard's script (polls `/ui/api/*` with the token entered, a viewer token or more). */
export const DASHBOARD_JS = String.raw`
(function () {
  'use strict';
  var TOKEN_KEY = 'rsc-dashboard-token';
  var state = { token: null, group: null, dlq: null, dlqIds: [], timer: null, interval: 1000 };

  function $(id) { return document.getElementById(id); }
  function el(tag, props, children) {
    var node = document.createElement(tag);
    if (props) {
      Object.keys(props).forEach(function (k) {
        var v = props[k];
        if (v === undefined || v === null) return;
        if (k === 'text') node.textContent = String(v);
        else if (k === 'className') node.className = v;
        else if (k === 'onclick') node.addEventListener('click', v);
        else if (k === 'width') node.style.width = v;
        else node.setAttribute(k, String(v));
      });
    }
    (children || []).forEach(function (c) { if (c !== null && c !== undefined) node.appendChild(typeof c === 'string' ? document.createTextNode(c) : c); });
    return node;
  }
  function badge(text) { return el('span', { className: 'badge ' + text, text: text }); }
  function fmtShards(list) {
    if (!list || list.length === 0) return '-';
    return list.map(function (e) { return e.stream + ':' + e.shards.join(','); }).join(' ');
  }
  function count(list) { return (list || []).reduce(function (n, e) { return n + e.shards.length; }, 0); }
  function ago(iso) {
    var s = Math.max(0, Math.round((Date.now() - Date.parse(iso)) / 1000));
    return s < 60 ? s + ' s ago' : Math.round(s / 60) + ' min ago';
  }

  function readLocation() {
    var hash = new URLSearchParams(location.hash.replace(/^#/, ''));
    var token = hash.get('token');
    if (token) {
      sessionStorage.setItem(TOKEN_KEY, token);
      hash.delete('token');
    }
    state.token = sessionStorage.getItem(TOKEN_KEY);
    state.group = hash.get('group') || state.group;
    state.dlq = hash.get('dlq') || state.dlq;
    var query = new URLSearchParams(location.search);
    var interval = Number(query.get('interval'));
    if (interval >= 250) state.interval = interval;
    writeHash();
  }
  function writeHash() {
    var parts = [];
    if (state.group) parts.push('group=' + encodeURIComponent(state.group));
    if (state.dlq) parts.push('dlq=' + encodeURIComponent(state.dlq));
    var h = parts.length ? '#' + parts.join('&') : '';
    if (location.hash !== h) history.replaceState(null, '', location.pathname + location.search + h);
  }

  function AuthError(message) { this.message = message; }
  function api(path, body) {
    var headers = state.token ? { Authorization: 'Bearer ' + state.token } : {};
    var init = { headers: headers, cache: 'no-store' };
    if (body !== undefined) {
      headers['Content-Type'] = 'application/json';
      init.method = 'POST';
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.text().then(function (text) {
        var body = null;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
        var err = body && body.error ? body.error.code + ': ' + body.error.message : 'HTTP ' + res.status;
        if (res.status === 401 || res.status === 403) throw new AuthError(err);
        if (!res.ok) throw new Error(err);
        return body;
      });
    });
  }

  function setStatus(text, error) {
    var s = $('status');
    s.textContent = text;
    s.className = 'status' + (error ? ' error' : '');
  }
  function showLogin(message) {
    $('login').classList.remove('hidden');
    $('app').classList.add('hidden');
    $('login-error').textContent = message || '';
  }
  function showApp() {
    $('login').classList.add('hidden');
    $('app').classList.remove('hidden');
  }

  function renderOverview(o) {
    var list = $('groups');
    list.replaceChildren.apply(list, o.groups.length === 0 ? [el('p', { className: 'muted', text: 'no groups yet' })] : o.groups.map(function (g) {
      return el('button', {
        className: 'group-item' + (g.groupId === state.group ? ' selected' : ''),
        'data-group': g.groupId,
        onclick: function () { state.group = g.groupId; writeHash(); refresh(); }
      }, [el('span', { text: g.groupId }), el('span', {}, [badge(g.state), ' e' + g.groupEpoch + ' · ' + g.members])]);
    }));
    var streams = $('streams');
    streams.replaceChildren.apply(streams, o.streams.length === 0 ? [el('p', { className: 'muted', text: 'no streams' })] : o.streams.map(function (s) {
      return el('div', { 'data-stream': s.stream }, [
        el('b', { text: s.stream }), ' ', el('span', { className: 'muted', text: s.shards + ' shards · routing epoch ' + s.routingEpoch }), ' ',
        el('button', { type: 'button', className: 'link', 'data-dlq-open': s.stream, text: 'dead letters', onclick: function () { state.dlq = s.stream; writeHash(); refresh(); } }),
        s.resharding ? reshardBlock(s.resharding) : null
      ]);
    }));
  }

  function reshardBlock(r) {
    var drained = r.drain.filter(function (d) { return d.pendingGroups.length === 0; }).length;
    var pct = r.drain.length ? Math.round((100 * drained) / r.drain.length) : 100;
    return el('div', { className: 'reshard', 'data-reshard': r.state }, [
      el('div', { text: 'resharding ' + r.fromShards.length + ' → ' + r.toShards.length + ' (' + r.state + ', ' + r.mode + '): ' + drained + '/' + r.drain.length + ' old shards drained' }),
      el('div', { className: 'bar' }, [el('div', { width: pct + '%' })]),
      (r.idleGroups || []).length ? el('div', { className: 'muted', text: 'old shards kept for idle group(s): ' + r.idleGroups.map(function (g) { return g.group + ' (no member since ' + g.since + ')'; }).join(', ') + ' — they read them when they come back; rsc streams abandon <stream> <group> gives them up' }) : null,
      r.abandonedGroups.length ? el('div', { className: 'muted', text: 'abandoned: ' + r.abandonedGroups.map(function (g) { return g.group + ' (' + g.reason + ')'; }).join(', ') }) : null
    ]);
  }

  function renderGroup(d) {
    var g = d.group;
    $('group-title').textContent = 'Group ' + g.groupId;
    var summary = $('summary');
    summary.replaceChildren(
      el('div', {}, [el('span', { text: 'state' }), badge(g.state)]),
      el('div', {}, [el('span', { text: 'group epoch' }), el('b', { text: g.groupEpoch })]),
      el('div', {}, [el('span', { text: 'assignment epoch' }), el('b', { text: g.assignmentEpoch })]),
      el('div', {}, [el('span', { text: 'assignor' }), el('b', { text: g.assignor })]),
      el('div', {}, [el('span', { text: 'members' }), el('b', { text: g.members.length })]),
      el('div', {}, [el('span', { text: 'view' }), el('b', { text: d.source === 'projection' ? 'event log (v' + d.version + ')' : 'live records' })])
    );

    var members = $('members');
    members.replaceChildren(
      el('tr', {}, ['member', 'instance', 'epoch', 'state', 'streams', 'assigned', 'revoking', 'target', 'last heartbeat', 'host'].map(function (h) { return el('th', { text: h }); })),
      ...g.members.map(function (m) {
        var st = m.memberEpoch === -2 ? 'TEMPORARILY_LEFT' : m.state;
        return el('tr', { 'data-member': m.memberId }, [
          el('td', { text: m.memberId }), el('td', { text: m.instanceId || '-' }), el('td', { className: 'num', text: m.memberEpoch }),
          el('td', {}, [badge(st)]), el('td', { text: m.subscribedStreams.join(', ') }),
          el('td', { className: 'num', text: count(m.assignment), title: fmtShards(m.assignment) }),
          el('td', { className: 'num', text: count(m.pendingRevocation), title: fmtShards(m.pendingRevocation) }),
          el('td', { className: 'num', text: count(m.target), title: fmtShards(m.target) }),
          el('td', { text: ago(m.lastHeartbeatAt), title: m.lastHeartbeatAt }), el('td', { text: m.clientHost || '-' })
        ]);
      })
    );

    var ids = g.members.map(function (m) { return m.memberId; });
    var symbols = { owned: '● owned', revoking: '⇣ revoking', awaiting: '◐ awaiting', pending: '○ pending' };
    var grid = $('grid');
    grid.replaceChildren(
      el('tr', {}, [el('th', { text: 'shard' })].concat(ids.map(function (id) { return el('th', { text: id }); }), [el('th', { text: 'lag' }), el('th', { text: 'pending' })])),
      ...d.shards.map(function (s) {
        var name = s.stream + '/' + s.shard;
        return el('tr', { 'data-shard': name }, [el('td', {}, [name, s.draining ? el('span', { className: 'draining', text: ' draining' }) : null])].concat(
          ids.map(function (id) {
            var c = s.cells[id];
            return el('td', { className: 'cell' + (c ? ' cell-' + c : ''), 'data-member': id, 'data-cell': c || '', text: c ? symbols[c] : '' });
          }),
          [el('td', { className: 'num', 'data-lag': name, text: s.lag === null ? '–' : s.lag }), el('td', { className: 'num', text: s.pending === null ? '–' : s.pending })]
        ));
      })
    );

    var reshards = d.streams.filter(function (s) { return s.resharding; });
    $('reshard-section').classList.toggle('hidden', reshards.length === 0);
    var rs = $('reshards');
    rs.replaceChildren.apply(rs, reshards.map(function (s) {
      return el('div', {}, [el('b', { text: s.stream }), reshardBlock(s.resharding), el('table', {}, [
        el('tr', {}, ['old shard', 'closed', 'drained by', 'pending for', 'removed'].map(function (h) { return el('th', { text: h }); }))
      ].concat(s.resharding.drain.map(function (x) {
        return el('tr', {}, [el('td', { text: x.shard }), el('td', { text: x.closed ? 'yes' : 'no' }), el('td', { text: x.drainedGroups.join(', ') || '-' }), el('td', { text: x.pendingGroups.join(', ') || '-' }), el('td', { text: x.removed ? 'yes' : 'no' })]);
      })))]);
    }));

    var tl = $('timeline');
    tl.replaceChildren.apply(tl, d.timeline.slice().reverse().map(function (e) {
      return el('li', { 'data-type': e.type }, [
        el('span', { className: 't', text: e.at.replace('T', ' ').replace(/\.\d+Z$/, 'Z') }),
        el('span', { className: 'type', text: e.type }), el('span', { text: e.summary })
      ]);
    }));
    $('group-panel').classList.remove('hidden');
  }

  function dlqPath(suffix) { return '/v1/streams/' + encodeURIComponent(state.dlq) + '/dead-letters' + suffix; }
  function renderDeadLetters(list) {
    $('dlq-title').textContent = 'Dead letters of ' + list.stream;
    state.dlqIds = list.entries.map(function (e) { return e.id; });
    var t = $('dead-letters');
    t.replaceChildren(
      el('tr', {}, ['id', 'failed at', 'group', 'shard', 'reason', 'deliveries', 'key', 'error', ''].map(function (h) { return el('th', { text: h }); })),
      ...list.entries.map(function (e) {
        return el('tr', { 'data-dlq': e.id }, [
          el('td', { text: e.id }), el('td', { text: e.failedAt || '-' }), el('td', { text: e.group || '-' }),
          el('td', { className: 'num', text: e.shard === null ? '-' : e.shard }), el('td', { text: e.reason || '-' }),
          el('td', { className: 'num', text: e.deliveryCount === null ? '-' : e.deliveryCount }), el('td', { text: e.key === null ? '-' : e.key }),
          el('td', { title: e.stack || '', text: (e.errorName ? e.errorName + ': ' : '') + (e.error || '') }),
          el('td', {}, [el('button', { type: 'button', 'data-replay': e.id, text: 'replay', onclick: function () { replay([e.id]); } })])
        ]);
      })
    );
    if (list.entries.length === 0) t.appendChild(el('tr', {}, [el('td', { className: 'muted', text: 'no dead letters waiting' })]));
    $('dlq-replay-all').disabled = list.entries.length === 0;
    $('dlq-panel').classList.remove('hidden');
  }
  function renderDeadLettersRefused(message) {
    $('dlq-title').textContent = 'Dead letters of ' + state.dlq;
    state.dlqIds = [];
    $('dead-letters').replaceChildren(el('tr', {}, [el('td', { className: 'muted',
      text: 'not shown (' + message + '): dead letters hold message payloads, reading them needs a member token, replaying them an admin token' })]));
    $('dlq-replay-all').disabled = true;
    $('dlq-panel').classList.remove('hidden');
  }
  function replay(ids) {
    if (!state.dlq || ids.length === 0) return;
    $('dlq-result').textContent = 'replaying ' + ids.length + '…';
    api(dlqPath('/replay'), { ids: ids }).then(function (r) {
      var counts = {};
      r.results.forEach(function (x) { counts[x.outcome] = (counts[x.outcome] || 0) + 1; });
      $('dlq-result').textContent = Object.keys(counts).map(function (k) { return k + ' ' + counts[k]; }).join(', ');
      $('dlq-result').setAttribute('data-replayed', String(r.replayed));
      refresh();
    }, function (e) { $('dlq-result').textContent = 'replay failed: ' + e.message; });
  }

  function schedule() {
    clearTimeout(state.timer);
    state.timer = setTimeout(refresh, state.interval);
  }

  function refresh() {
    clearTimeout(state.timer);
    if (!state.token) { showLogin(''); return Promise.resolve(); }
    return api('/ui/api/overview').then(function (o) {
      showApp();
      if (!state.group || !o.groups.some(function (g) { return g.groupId === state.group; })) {
        state.group = o.groups.length ? o.groups[0].groupId : null;
        writeHash();
      }
      renderOverview(o);
      if (!state.group) { $('group-panel').classList.add('hidden'); return null; }
      return api('/ui/api/groups/' + encodeURIComponent(state.group)).then(renderGroup);
    }).then(function () {
      if (!state.dlq) { $('dlq-panel').classList.add('hidden'); return null; }
      // A viewer may not read dead letters (they hold payloads): say so, stay signed in.
      return api(dlqPath('?limit=50&replayed=false')).then(renderDeadLetters, function (e) {
        if (!(e instanceof AuthError)) throw e;
        renderDeadLettersRefused(e.message);
      });
    }).then(function () {
      setStatus('live · refreshed ' + new Date().toLocaleTimeString() + ' · every ' + state.interval + ' ms', false);
      document.body.setAttribute('data-refreshed', String(Date.now()));
      schedule();
    }, function (e) {
      if (e instanceof AuthError) { showLogin(e.message); return; }
      setStatus('error: ' + e.message + ' (retrying)', true);
      schedule();
    });
  }

  document.addEventListener('DOMContentLoaded', function () {
    readLocation();
    $('login-form').addEventListener('submit', function (ev) {
      ev.preventDefault();
      state.token = $('token-input').value.trim();
      sessionStorage.setItem(TOKEN_KEY, state.token);
      refresh();
    });
    $('logout').addEventListener('click', function () {
      sessionStorage.removeItem(TOKEN_KEY);
      state.token = null;
      showLogin('');
    });
    $('dlq-replay-all').addEventListener('click', function () { replay(state.dlqIds.slice()); });
    $('dlq-close').addEventListener('click', function () { state.dlq = null; writeHash(); refresh(); });
    window.addEventListener('hashchange', function () { readLocation(); refresh(); });
    refresh();
  });
})();
`;
