// CIP-11 validator dashboard: polls dashboard.json every second and redraws.
// Plain DOM and canvas, no libraries. Data is only ever set as textContent.
'use strict';
(function () {
  const STATES = ['submitted', 'pending', 'assigned', 'completed', 'expired'];
  const EDGES = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000]; // ms bucket upper bounds
  const HISTORY = 120; // polls kept for the time-series charts
  const COLORS = { dim: '#8897a6', line: '#2a3642', acc: '#4fb3ff', ok: '#4cd07d', fg: '#d8e0e8' };

  const $ = (id) => document.getElementById(id);
  const history = { connected: [], present: [], assigned: [], completedRate: [] };
  let prev = null; // {t, jobs}

  function push(arr, v) { arr.push(v); if (arr.length > HISTORY) arr.shift(); }
  function set(id, v) { $(id).textContent = String(v); }
  function num(v) { return typeof v === 'number' && isFinite(v) ? v : 0; }

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
    return { c, w, h };
  }

  function lines(canvas, series) {
    const { c, w, h } = ctx2d(canvas);
    let top = 1;
    for (const s of series) for (const v of s.data) top = Math.max(top, v);
    c.strokeStyle = COLORS.line; c.lineWidth = 1;
    c.beginPath(); c.moveTo(0, h - 0.5); c.lineTo(w, h - 0.5); c.stroke();
    c.fillStyle = COLORS.dim; c.font = '11px system-ui, sans-serif';
    c.fillText(String(Math.round(top * 100) / 100), 2, 11);
    for (const s of series) {
      if (s.data.length < 2) continue;
      c.strokeStyle = s.color; c.lineWidth = 1.5; c.beginPath();
      s.data.forEach((v, i) => {
        const x = (w * (i + HISTORY - s.data.length)) / (HISTORY - 1);
        const y = h - 2 - ((h - 14) * v) / top;
        if (i === 0) c.moveTo(x, y); else c.lineTo(x, y);
      });
      c.stroke();
    }
  }

  function fmtMs(ms) {
    if (ms >= 1000) return (ms / 1000).toFixed(ms >= 10000 ? 0 : 1) + ' s';
    return (ms >= 10 ? ms.toFixed(0) : ms.toFixed(1)) + ' ms';
  }

  function quantile(sorted, q) {
    if (!sorted.length) return 0;
    return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  }

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
    const labels = EDGES.map((e) => '≤' + fmtMs(e).replace(' ', '')).concat(['>10s']);
    const { c, w, h } = ctx2d($('latChart'));
    const top = Math.max(1, ...counts);
    const bw = w / counts.length;
    const base = h - 18;
    c.font = '10px system-ui, sans-serif'; c.textAlign = 'center';
    counts.forEach((n, i) => {
      const bh = ((base - 14) * n) / top;
      c.fillStyle = i < 7 ? COLORS.ok : i < 10 ? '#f0b429' : '#ff6b6b';
      c.fillRect(i * bw + 2, base - bh, bw - 4, bh);
      c.fillStyle = COLORS.dim;
      c.fillText(labels[i], i * bw + bw / 2, h - 5);
      if (n > 0) { c.fillStyle = COLORS.fg; c.fillText(String(n), i * bw + bw / 2, base - bh - 3); }
    });
  }

  function flow(jobs, now) {
    const el = $('flow');
    if (!el.childElementCount) {
      STATES.forEach((s, i) => {
        if (i > 0) { const a = document.createElement('div'); a.className = 'arrow'; a.textContent = '→'; el.appendChild(a); }
        const box = document.createElement('div'); box.className = 'st ' + s;
        const n = document.createElement('div'); n.className = 'n'; n.id = 'job-' + s; n.textContent = '–';
        const name = document.createElement('div'); name.textContent = s;
        const r = document.createElement('div'); r.className = 'r'; r.id = 'rate-' + s; r.textContent = '';
        box.append(n, name, r); el.appendChild(box);
      });
    }
    const dt = prev ? (now - prev.t) / 1000 : 0;
    for (const s of STATES) {
      const v = num(jobs[s]);
      set('job-' + s, v);
      if (prev && dt > 0) {
        const d = (v - num(prev.jobs[s])) / dt;
        set('rate-' + s, (d >= 0 ? '+' : '') + d.toFixed(1) + '/s');
      }
    }
    const completedRate = prev && dt > 0 ? Math.max(0, (num(jobs.completed) - num(prev.jobs.completed)) / dt) : 0;
    push(history.assigned, num(jobs.assigned));
    push(history.completedRate, completedRate);
    lines($('jobsChart'), [{ data: history.assigned, color: COLORS.acc }, { data: history.completedRate, color: COLORS.ok }]);
    prev = { t: now, jobs };
  }

  function list(id, noteId, addrs, total) {
    const ol = $(id);
    const frag = document.createDocumentFragment();
    for (const a of addrs) { const li = document.createElement('li'); li.textContent = a; frag.appendChild(li); }
    ol.replaceChildren(frag);
    set(noteId, addrs.length < total ? `showing ${addrs.length} of ${total}` : `${total} total`);
  }

  function blocks(rows) {
    const frag = document.createDocumentFragment();
    for (const b of rows) {
      const tr = document.createElement('tr');
      const t = new Date(b.time);
      const cells = [b.height, isNaN(t) ? '' : t.toLocaleTimeString(), b.txs, b.assignments, b.pushed, num(b.exec_ms).toFixed(2)];
      for (const v of cells) { const td = document.createElement('td'); td.textContent = String(v); tr.appendChild(td); }
      frag.appendChild(tr);
    }
    $('blocks').replaceChildren(frag);
  }

  function render(d) {
    const s = d.status || {};
    set('chain', s.chain_id ?? '–');
    set('height', s.height ?? '–');
    set('epoch', s.subset_epoch ?? '–');
    set('blocktime', s.block_time_ms != null ? s.block_time_ms + ' ms' : '–');
    set('quic', s.quic_addr || '–');
    set('poll', s.poll_disabled ? 'disabled (410)' : 'enabled');
    set('version', s.version || '–');
    set('connected', num(s.connected));
    set('present', num(s.present));
    set('registered', num(s.runners));
    set('mempool', num(s.mempool));
    push(history.connected, num(s.connected));
    push(history.present, num(s.present));
    lines($('runnersChart'), [{ data: history.connected, color: COLORS.acc }, { data: history.present, color: COLORS.ok }]);
    flow(d.jobs || {}, Date.now());
    latency((d.push_latency_ms || []).filter((v) => typeof v === 'number' && isFinite(v)));
    blocks(d.recent_blocks || []);
    list('connectedList', 'connectedNote', d.connected_runners || [], num(s.connected));
    list('presentList', 'presentNote', d.present_runners || [], num(s.present));
  }

  async function tick() {
    const conn = $('conn');
    try {
      const r = await fetch('dashboard.json', { cache: 'no-store' });
      if (!r.ok) throw new Error('HTTP ' + r.status);
      render(await r.json());
      conn.className = 'ok';
      conn.textContent = 'live · ' + new Date().toLocaleTimeString();
    } catch (e) {
      conn.className = 'err';
      conn.textContent = 'error: ' + e.message;
    } finally {
      setTimeout(tick, 1000);
    }
  }
  tick();
})();
