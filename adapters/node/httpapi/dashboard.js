// CIP-11 validator dashboard: polls dashboard.json every second and redraws.
// Plain DOM and canvas, no libraries. Data is only ever set as textContent.
// Rates are throughput: the change of the cumulative counters (totals)
// between snapshots divided by the change of the node's clock (now).
'use strict';
(function () {
  const STATES = ['submitted', 'pending', 'assigned', 'completed', 'expired'];
  // the counter whose rate is the flow into each state
  const INTO = { submitted: 'accepted', pending: 'submitted', assigned: 'assigned', completed: 'completed', expired: 'expired' };
  const EDGES = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]; // ms bucket upper bounds
  const HISTORY = 120; // polls kept for the time-series charts (about 2 minutes)
  const WINDOW = 10; // snapshots the rates are taken over
  const FETCH_TIMEOUT = 3000; // ms
  const COLORS = { dim: '#8897a6', line: '#2a3642', acc: '#4fb3ff', ok: '#4cd07d', warn: '#f0b429', bad: '#ff6b6b', fg: '#d8e0e8', purple: '#c792ea' };
  // failure counters: [kind, total getter, meaning]
  const FAILURES = [
    ['push_failed', (t) => t.push_failed, 'a push could not be sent (runner gone, stream error)'],
    ['soft_failure', (t) => t.soft_failures, '§10.6 soft failure: push rejected or answered with another frame (runner alive)'],
    ['hard_failure', (t) => t.hard_failures, '§10.6 hard failure: push timed out, no framed answer within ACK_TIMEOUT_BLOCKS'],
    ['reselected', (t) => t.reselections, '§11.2 timeout re-selection drew a new committee'],
    ['expired', (t) => t.expired, '§11.2 job expired'],
    ['restart', (t) => t.restarts, 'validator restarted over its chain'],
  ];

  const $ = (id) => document.getElementById(id);
  const series = { connected: [], present: [], accepted: [], completed: [], expired: [], failed: [] };
  let snaps = []; // [{now(ms), totals, started}] newest last
  let lastOk = 0; // Date.now() of the last good snapshot
  let lastStarted = null;
  let restartsSeen = 0;

  function push(arr, v) { arr.push(v); if (arr.length > HISTORY) arr.shift(); }
  function set(id, v) { $(id).textContent = String(v); }
  function num(v) { return typeof v === 'number' && isFinite(v) ? v : 0; }
  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  // a free-text cell, cut to the column with the whole text as its title
  function detail(text) {
    const td = el('td', text || '', 'l detail');
    if (text) td.title = text;
    return td;
  }
  function short(hex) { return typeof hex === 'string' && hex.length > 16 ? hex.slice(0, 8) + '…' + hex.slice(-6) : (hex || ''); }
  function timeOf(s) {
    const t = new Date(s);
    return isNaN(t) || t.getUTCFullYear() < 2000 ? '–' : t.toLocaleTimeString();
  }

  // canvas sized for the device pixel ratio; returns a 2D context in CSS pixels.
  function ctx2d(canvas) {
    const dpr = window.devicePixelRatio || 1;
    const w = canvas.clientWidth || 300;
    const h = Number(canvas.getAttribute('height')) || 100;
    if (canvas.width !== Math.round(w * dpr) || canvas.dataset.h !== String(h)) {
      canvas.width = Math.round(w * dpr);
      canvas.height = Math.round(h * dpr);
      canvas.style.height = h + 'px';
      canvas.dataset.h = String(h);
    }
    const c = canvas.getContext('2d');
    c.setTransform(dpr, 0, 0, dpr, 0, 0);
    c.clearRect(0, 0, w, h);
    c.font = '11px system-ui, sans-serif';
    return { c, w, h };
  }

  function niceTop(v) {
    if (v <= 1) return 1;
    const p = Math.pow(10, Math.floor(Math.log10(v)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
    return 10 * p;
  }
  function fmtNum(v) { return v >= 100 || Number.isInteger(v) ? String(Math.round(v)) : v.toFixed(v >= 10 ? 1 : 2); }

  // legend: colour swatch and dash pattern per series, in the top row.
  function legend(c, list, x0) {
    let x = x0;
    c.textAlign = 'left';
    for (const s of list) {
      c.strokeStyle = s.color; c.lineWidth = 2; c.setLineDash(s.dash || []);
      c.beginPath(); c.moveTo(x, 7); c.lineTo(x + 16, 7); c.stroke(); c.setLineDash([]);
      c.fillStyle = COLORS.fg; c.fillText(s.name, x + 20, 11);
      x += 28 + c.measureText(s.name).width;
    }
  }

  // Time-series line chart with a labelled y axis (yLabel), an x axis in
  // seconds ago and a legend.
  function lineChart(canvas, list, yLabel) {
    const { c, w, h } = ctx2d(canvas);
    const L = 44, R = 8, T = 20, B = 26;
    let top = 0;
    for (const s of list) for (const v of s.data) top = Math.max(top, v);
    top = niceTop(top);
    c.strokeStyle = COLORS.line; c.lineWidth = 1; c.fillStyle = COLORS.dim; c.textAlign = 'right';
    for (const f of [0, 0.5, 1]) {
      const y = Math.round(T + (h - T - B) * (1 - f)) + 0.5;
      c.beginPath(); c.moveTo(L, y); c.lineTo(w - R, y); c.stroke();
      c.fillText(fmtNum(top * f), L - 4, y + 4);
    }
    c.textAlign = 'center';
    for (const ago of [120, 90, 60, 30, 0]) {
      const x = L + (w - L - R) * (1 - ago / HISTORY);
      c.fillText(ago === 0 ? 'now' : '−' + ago + ' s', x, h - B + 14);
    }
    c.fillText('seconds ago', L + (w - L - R) / 2, h - 2);
    c.save(); c.translate(10, T + (h - T - B) / 2); c.rotate(-Math.PI / 2); c.fillText(yLabel, 0, 0); c.restore();
    for (const s of list) {
      if (s.data.length < 2) continue;
      c.strokeStyle = s.color; c.lineWidth = 1.8; c.setLineDash(s.dash || []); c.beginPath();
      s.data.forEach((v, i) => {
        const x = L + ((w - L - R) * (i + HISTORY - s.data.length)) / (HISTORY - 1);
        const y = T + (h - T - B) * (1 - v / top);
        if (i === 0) c.moveTo(x, y); else c.lineTo(x, y);
      });
      c.stroke(); c.setLineDash([]);
    }
    legend(c, list, L);
  }

  function fmtMs(ms) {
    if (ms >= 1000) return (ms / 1000).toFixed(ms >= 10000 ? 0 : 1) + ' s';
    return (ms >= 10 ? ms.toFixed(0) : ms.toFixed(1)) + ' ms';
  }
  function fmtEdge(ms) { return ms >= 1000 ? ms / 1000 + ' s' : ms + ' ms'; }

  function quantile(sorted, q) {
    if (!sorted.length) return 0;
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  }

  // Horizontal histogram: one row per bucket, its range as the label.
  function latency(samples) {
    const counts = new Array(EDGES.length + 1).fill(0);
    for (const s of samples) {
      let i = 0;
      while (i < EDGES.length && s > EDGES[i]) i++;
      counts[i]++;
    }
    const sorted = samples.slice().sort((a, b) => a - b);
    set('latStats', samples.length
      ? `${samples.length} samples · p50 ${fmtMs(quantile(sorted, 0.5))} · p95 ${fmtMs(quantile(sorted, 0.95))} · p99 ${fmtMs(quantile(sorted, 0.99))} · max ${fmtMs(sorted[sorted.length - 1])}`
      : 'no samples');
    const labels = EDGES.map((e, i) => (i === 0 ? '0' : fmtEdge(EDGES[i - 1]).replace(/ (ms|s)$/, '')) + '–' + fmtEdge(e))
      .concat(['> ' + fmtEdge(EDGES[EDGES.length - 1])]);
    const { c, w, h } = ctx2d($('latChart'));
    const L = 92, R = 40, T = 4, B = 22;
    const top = niceTop(Math.max(1, ...counts));
    const rh = (h - T - B) / counts.length;
    counts.forEach((n, i) => {
      const y = T + i * rh;
      const bw = ((w - L - R) * n) / top;
      c.fillStyle = i < 7 ? COLORS.ok : i < 10 ? COLORS.warn : COLORS.bad;
      c.fillRect(L, y + 1, bw, rh - 2);
      c.fillStyle = COLORS.dim; c.textAlign = 'right';
      c.fillText(labels[i], L - 6, y + rh / 2 + 4);
      if (n > 0) { c.fillStyle = COLORS.fg; c.textAlign = 'left'; c.fillText(String(n), L + bw + 4, y + rh / 2 + 4); }
    });
    c.strokeStyle = COLORS.line; c.beginPath(); c.moveTo(L + 0.5, T); c.lineTo(L + 0.5, h - B); c.lineTo(w - R, h - B); c.stroke();
    c.fillStyle = COLORS.dim; c.textAlign = 'center';
    c.fillText('0', L, h - B + 12); c.fillText(String(top), w - R, h - B + 12);
    c.fillText('pushes per latency bucket (block applied → JobAck)', L + (w - L - R) / 2, h - 2);
  }

  // rate of counter key over the snapshot window (per second); null when
  // there is no interval yet.
  function rate(key, pick) {
    if (snaps.length < 2) return null;
    const a = snaps[0], b = snaps[snaps.length - 1];
    const dt = (b.now - a.now) / 1000;
    if (!(dt > 0)) return null;
    const get = pick || ((t) => t[key]);
    return Math.max(0, (num(get(b.totals)) - num(get(a.totals))) / dt);
  }

  function refusedTotal(t) { let n = 0; for (const k in (t.refused || {})) n += num(t.refused[k]); return n; }

  // Adds a snapshot; a validator restart (started_at changed) or a counter
  // going down is a reset: the window starts again.
  function snapshot(d) {
    const now = Date.parse(d.now);
    const t = d.totals || {};
    const last = snaps[snaps.length - 1];
    let reset = !!last && (d.started_at !== last.started);
    if (last && !reset) {
      for (const k of ['accepted', 'submitted', 'assigned', 'pushed', 'completed', 'expired', 'push_failed', 'reselections']) {
        if (num(t[k]) < num(last.totals[k])) reset = true;
      }
    }
    if (lastStarted !== null && d.started_at !== lastStarted) restartsSeen++;
    lastStarted = d.started_at;
    if (reset) snaps = [];
    if (isFinite(now)) snaps.push({ now, totals: t, started: d.started_at });
    if (snaps.length > WINDOW) snaps.shift();
  }

  function flow(jobs) {
    const box = $('flow');
    if (!box.childElementCount) {
      const stage = (s) => {
        const b = el('div', null, 'st ' + s);
        b.append(el('div', '–', 'n'), el('div', s), el('div', '', 'r'));
        b.children[0].id = 'job-' + s; b.children[2].id = 'rate-' + s;
        return b;
      };
      ['submitted', 'pending', 'assigned'].forEach((s, i) => { if (i > 0) box.appendChild(el('div', '→', 'arrow')); box.appendChild(stage(s)); });
      box.appendChild(el('div', '→', 'arrow'));
      const fork = el('div', null, 'fork');
      fork.append(stage('completed'), stage('expired'));
      box.appendChild(fork);
    }
    for (const s of STATES) {
      set('job-' + s, num(jobs[s]));
      const r = rate(INTO[s]);
      set('rate-' + s, r === null ? '… /s in' : r.toFixed(2) + ' /s in');
    }
    push(series.accepted, rate('accepted') || 0);
    push(series.completed, rate('completed') || 0);
    push(series.expired, rate('expired') || 0);
    lineChart($('jobsChart'), [
      { name: 'submitted/s', data: series.accepted, color: COLORS.acc },
      { name: 'completed/s', data: series.completed, color: COLORS.ok, dash: [6, 3] },
      { name: 'expired/s', data: series.expired, color: COLORS.bad, dash: [2, 2] },
    ], 'jobs / s');
  }

  function failures(d) {
    const t = d.totals || {};
    const frag = document.createDocumentFragment();
    let active = false;
    const row = (kind, total, r, meaning) => {
      const tr = el('tr');
      tr.dataset.kind = kind;
      if (r !== null && r > 0) { tr.className = 'bad'; active = true; } else if (total > 0) tr.className = 'warn';
      tr.append(el('td', kind), el('td', total), el('td', r === null ? '…' : (r * 60).toFixed(1)), el('td', meaning, 'l'));
      frag.appendChild(tr);
    };
    for (const [kind, get, meaning] of FAILURES) row(kind, num(get(t)), rate(null, get), meaning);
    row('refused', refusedTotal(t), rate(null, refusedTotal), 'runner handshakes refused (§12.5), by reason below');
    const reasons = Object.keys(t.refused || {}).sort();
    for (const k of reasons) row('refused: ' + k, num(t.refused[k]), rate(null, (x) => (x.refused || {})[k]), '§12.5 Goodbye reason');
    $('failureKinds').replaceChildren(frag);
    $('failuresPanel').classList.toggle('alert', active);
    set('failNote', 'per-minute rates over the last ' + snaps.length + ' snapshots of the counters' +
      (restartsSeen ? ` · ${restartsSeen} validator restart(s) seen by this page` : ''));
    const fails = d.failures || [];
    const rows = document.createDocumentFragment();
    for (const f of fails) {
      const tr = el('tr', null, f.kind === 'reselected' || f.kind === 'restart' ? 'warn' : 'bad');
      tr.dataset.kind = f.kind;
      const job = el('td', null, 'l mono');
      if (f.job) {
        const b = el('button', short(f.job), 'link');
        b.type = 'button'; b.title = f.job;
        b.addEventListener('click', () => { $('jobId').value = f.job; lookup(f.job); });
        job.appendChild(b);
      }
      tr.append(el('td', timeOf(f.time)), el('td', f.height === '0' ? '–' : f.height), el('td', f.kind, 'l'), job,
        el('td', short(f.runner), 'l mono'), detail(f.detail));
      rows.appendChild(tr);
    }
    $('failureRows').replaceChildren(rows);
    $('failureEmpty').style.display = fails.length ? 'none' : '';
  }

  function runnerTable(d, height) {
    const frag = document.createDocumentFragment();
    const blockTime = new Map((d.recent_blocks || []).map((b) => [Number(b.height), timeOf(b.time)]));
    for (const r of d.runners || []) {
      // elsewhere: not connected here, but a peer validator reports it
      // present (it holds links to other members of its Sub(R))
      const tr = el('tr', null, r.elsewhere ? '' : !r.connected ? 'bad' : !r.present ? 'warn' : '');
      tr.dataset.health = r.connected || r.elsewhere ? 'ok' : 'bad';
      const ping = Number(r.last_ping_height) || 0;
      const pingText = ping ? `${ping} (${Math.max(0, height - ping)} blocks ago${blockTime.has(ping) && blockTime.get(ping) !== '–' ? ', ' + blockTime.get(ping) : ''})`
        : r.elsewhere ? '– (linked to other validators)' : 'never';
      tr.append(el('td', r.address, 'l mono'),
        el('td', r.connected ? 'yes' : r.elsewhere ? 'elsewhere' : 'no', r.connected || r.elsewhere ? 'yes' : 'no'),
        el('td', r.present ? 'yes' : r.elsewhere ? 'at a peer' : 'no', r.present || r.elsewhere ? 'yes' : 'no'),
        el('td', pingText),
        el('td', num(r.in_flight)),
        el('td', r.last_outcome ? `${r.last_outcome} @ ${r.last_outcome_height}` : '–', 'l'));
      frag.appendChild(tr);
    }
    $('runnerRows').replaceChildren(frag);
    const n = (d.runners || []).length;
    set('runnersNote', `${n} runners shown (${num((d.status || {}).runners)} registered); red: not connected here and not reported present by a peer validator, amber: connected but not present; "elsewhere": linked to other validators of its Sub(R) (presence gossip)`);
  }

  function blocks(rows) {
    const frag = document.createDocumentFragment();
    for (const b of rows) {
      const tr = el('tr');
      const known = timeOf(b.time) !== '–'; // blocks rebuilt from the block log carry no time, pushes or exec time
      for (const v of [b.height, timeOf(b.time), b.txs, b.assignments, known ? b.pushed : '–', known ? num(b.exec_ms).toFixed(2) : '–']) tr.appendChild(el('td', v));
      frag.appendChild(tr);
    }
    $('blocks').replaceChildren(frag);
    // bars: txs and assignments per block, oldest left
    const list = rows.slice().reverse();
    const { c, w, h } = ctx2d($('blocksChart'));
    const L = 44, R = 8, T = 20, B = 26;
    let top = 1;
    for (const b of list) top = Math.max(top, num(b.txs), num(b.assignments));
    top = niceTop(top);
    c.strokeStyle = COLORS.line; c.fillStyle = COLORS.dim; c.textAlign = 'right';
    for (const f of [0, 0.5, 1]) {
      const y = Math.round(T + (h - T - B) * (1 - f)) + 0.5;
      c.beginPath(); c.moveTo(L, y); c.lineTo(w - R, y); c.stroke();
      c.fillText(fmtNum(top * f), L - 4, y + 4);
    }
    c.save(); c.translate(10, T + (h - T - B) / 2); c.rotate(-Math.PI / 2); c.textAlign = 'center'; c.fillText('per block', 0, 0); c.restore();
    const bw = (w - L - R) / Math.max(1, list.length);
    list.forEach((b, i) => {
      const x = L + i * bw;
      const ht = ((h - T - B) * num(b.txs)) / top, ha = ((h - T - B) * num(b.assignments)) / top;
      c.fillStyle = COLORS.acc; c.fillRect(x + 1, h - B - ht, Math.max(1, bw / 2 - 1), ht);
      c.fillStyle = COLORS.purple; c.fillRect(x + bw / 2, h - B - ha, Math.max(1, bw / 2 - 1), ha);
    });
    c.fillStyle = COLORS.dim; c.textAlign = 'center';
    if (list.length) {
      c.fillText(String(list[0].height), L + bw / 2, h - B + 14);
      c.fillText(String(list[list.length - 1].height), w - R - bw / 2, h - B + 14);
    }
    c.fillText('block height', L + (w - L - R) / 2, h - 2);
    c.textAlign = 'left';
    c.fillStyle = COLORS.acc; c.fillRect(L, 2, 12, 10); c.fillStyle = COLORS.fg; c.fillText('txs', L + 16, 11);
    c.fillStyle = COLORS.purple; c.fillRect(L + 50, 2, 12, 10); c.fillStyle = COLORS.fg; c.fillText('assignments', L + 66, 11);
    const rebuilt = rows.filter((b) => timeOf(b.time) === '–').length;
    set('blocksNote', 'the last ' + rows.length + ' blocks' +
      (rebuilt ? `; ${rebuilt} rebuilt from the block log at the validator's start (their time and pushes are unknown)` : ''));
  }

  function fmtAge(ms) { return ms >= 10000 ? Math.round(ms / 1000) + ' s' : fmtMs(ms); }

  // Health: the header's badge and, when not ok, a banner: red when the
  // validator is stalled (with the age of its last block) or failed,
  // amber while it catches up.
  function health(s) {
    const age = num(s.last_block_age_ms);
    let state = 'ok', badge = 'healthy', cls = 'ok', banner = '';
    if (s.failed) {
      state = 'failed'; badge = 'failed'; cls = 'bad'; banner = 'Validator failed: ' + s.failed;
    } else if (s.stalled) {
      state = 'stalled'; badge = `stalled · last block ${fmtAge(age)} ago`; cls = 'bad';
      banner = `Stalled: no new block for ${fmtAge(age)} (height ${s.height}; stalled after ${fmtAge(num(s.stall_after_ms))})` +
        ((s.validators || []).length ? ` — ${num(s.peers)} consensus peers` : '');
    } else if (s.catching_up) {
      state = 'catching_up'; badge = 'catching up'; cls = 'warn'; banner = `Catching up: block-syncing from ${num(s.peers)} peers (height ${s.height})`;
    }
    document.body.dataset.health = state;
    const b = $('health');
    b.className = cls;
    b.textContent = badge;
    set('healthBanner', banner);
    set('blockAge', fmtAge(age) + ' ago');
  }

  // Consensus facts of a network validator (absent on a single one).
  function consensus(s) {
    const vs = s.validators || [];
    $('consensusPanel').hidden = vs.length === 0;
    if (!vs.length) return;
    const latest = Number(s.latest_block_height) || 0;
    set('latestHeight', s.latest_block_height ?? '–');
    set('latestTime', timeOf(s.latest_block_time));
    set('peers', num(s.peers));
    set('catchingUp', s.catching_up ? 'yes' : 'no');
    const frag = document.createDocumentFragment();
    for (const v of vs) {
      const signed = Number(v.last_signed_height) || 0;
      const behind = signed ? Math.max(0, latest - signed) : null;
      const tr = el('tr', null, !v.connected || behind === null || behind > 3 ? 'bad' : '');
      tr.dataset.index = String(v.index);
      tr.append(el('td', v.index + (v.self ? ' (this)' : '')), el('td', short(v.peer_key), 'l mono'), el('td', short(v.address), 'l mono'),
        el('td', v.connected ? 'yes' : 'no', v.connected ? 'yes' : 'no'), el('td', signed || 'none seen'), el('td', behind === null ? '–' : behind));
      frag.appendChild(tr);
    }
    $('validatorRows').replaceChildren(frag);
  }

  function render(d) {
    const s = d.status || {};
    const height = Number(s.height) || 0;
    health(s);
    consensus(s);
    set('chain', s.chain_id ?? '–');
    set('height', s.height ?? '–');
    // retention: shown once the block log is pruned (earliest above 1)
    $('retained').hidden = !(Number(s.earliest_block_height) > 1);
    set('earliest', s.earliest_block_height ?? '–');
    set('epoch', s.subset_epoch ?? '–');
    set('blocktime', s.block_time_ms != null ? s.block_time_ms + ' ms' : '–');
    set('quic', s.quic_addr || '–');
    set('poll', s.poll_disabled ? 'disabled (410)' : 'enabled');
    set('started', timeOf(d.started_at));
    set('version', s.version || '–');
    set('connected', num(s.connected));
    set('present', num(s.present));
    set('registered', num(s.runners));
    set('mempool', num(s.mempool));
    const ma = d.mode_a;
    document.getElementById('modeACard').hidden = !ma;
    if (ma) {
      set('modeALabel', ma.effective ? 'proven (Mode A, hard exclude)' : 'proven (Mode A, shadow)');
      set('modeAProven', `${num(ma.proven)} / ${num(ma.registered)}`);
    }
    snapshot(d);
    push(series.connected, num(s.connected));
    push(series.present, num(s.present));
    lineChart($('runnersChart'), [
      { name: 'connected', data: series.connected, color: COLORS.acc },
      { name: 'present', data: series.present, color: COLORS.ok, dash: [6, 3] },
    ], 'runners');
    flow(d.jobs || {});
    failures(d);
    latency((d.push_latency_ms || []).filter((v) => typeof v === 'number' && isFinite(v)));
    blocks(d.recent_blocks || []);
    runnerTable(d, height);
  }

  // The unreachable state: the page greys out and a banner says how old
  // the data on it is.
  function unreachable(msg) {
    document.body.className = 'unreachable';
    document.body.dataset.state = 'unreachable';
    const age = lastOk ? Math.round((Date.now() - lastOk) / 1000) + ' s old' : 'never loaded';
    set('banner', `Validator unreachable (${msg}) — the data below is ${age}`);
    const conn = $('conn');
    conn.className = 'err';
    conn.textContent = 'unreachable';
  }

  async function fetchJSON(path) {
    const ctl = new AbortController();
    const timer = setTimeout(() => ctl.abort(), FETCH_TIMEOUT);
    try {
      const r = await fetch(path, { cache: 'no-store', signal: ctl.signal });
      const body = await r.json().catch(() => ({}));
      return { ok: r.ok, status: r.status, body };
    } finally {
      clearTimeout(timer);
    }
  }

  async function lookup(id) {
    const out = $('jobResult');
    id = String(id).trim().toLowerCase();
    if (!/^[0-9a-f]{64}$/.test(id)) { out.replaceChildren(el('div', 'a job id is 64 hex digits', 'err')); return; }
    let r;
    try { r = await fetchJSON('jobs/' + id); } catch (e) { out.replaceChildren(el('div', 'lookup failed: ' + e.message, 'err')); return; }
    if (!r.ok) { out.replaceChildren(el('div', r.status === 404 ? 'no such job' : 'error ' + r.status + ': ' + (r.body.error || ''), 'err')); return; }
    const j = r.body;
    const head = el('div');
    head.dataset.state = j.state;
    head.id = 'jobState';
    head.append(el('b', j.state), el('span', ` · kind ${j.job_kind} · ${j.runners} runner(s) · submitted at ${j.submitted_at} · deadline ${j.deadline_block} · committee ${(j.committee || []).map(short).join(', ') || '–'}`));
    const tbl = el('table');
    const th = el('tr');
    for (const c of ['time', 'height', 'kind', 'runner', 'detail']) th.appendChild(el('th', c, 'l'));
    tbl.appendChild(th);
    for (const e of j.events || []) {
      const tr = el('tr');
      tr.append(el('td', timeOf(e.time), 'l'), el('td', e.height, 'l'), el('td', e.kind, 'l'), el('td', short(e.runner), 'l mono'), detail(e.detail));
      tbl.appendChild(tr);
    }
    out.replaceChildren(head, tbl);
  }

  $('jobForm').addEventListener('submit', (ev) => { ev.preventDefault(); lookup($('jobId').value); });

  async function tick() {
    try {
      const r = await fetchJSON('dashboard.json');
      if (!r.ok) throw new Error('HTTP ' + r.status + (r.body.error ? ': ' + r.body.error : ''));
      render(r.body);
      lastOk = Date.now();
      document.body.className = 'live';
      document.body.dataset.state = 'live';
      const conn = $('conn');
      conn.className = 'ok';
      conn.textContent = 'live · ' + new Date(lastOk).toLocaleTimeString();
    } catch (e) {
      unreachable(e.name === 'AbortError' ? 'no answer in ' + FETCH_TIMEOUT / 1000 + ' s' : e.message);
    } finally {
      setTimeout(tick, 1000);
    }
  }
  tick();
})();
