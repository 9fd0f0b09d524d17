// The status page: fetches status.json every 2 s and renders it with DOM
// calls only (no innerHTML: instrument names and error texts are data).
"use strict";
(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const $ = (sel, root) => (root || document).querySelector(sel);
  // The instruments come a page at a time (status.json?offset&limit&q):
  // a venue of 100,000 is 31 MB of JSON whole.
  const PAGE = 500;
  let last = null, updates = 0, filter = "", offset = 0;

  function dur(ns) {
    if (!(ns > 0)) return "0 s";
    const s = ns / 1e9;
    if (s < 1) return (ns / 1e6).toFixed(0) + " ms";
    if (s < 60) return s.toFixed(1) + " s";
    if (s < 3600) return Math.floor(s / 60) + " m " + Math.floor(s % 60) + " s";
    if (s < 86400) return Math.floor(s / 3600) + " h " + Math.floor((s % 3600) / 60) + " m";
    return Math.floor(s / 86400) + " d " + Math.floor((s % 86400) / 3600) + " h";
  }
  function bytes(n) {
    if (!(n > 0)) return "0 B";
    const u = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let i = 0;
    while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : String(n)) + " " + u[i];
  }
  function setK(k, v) {
    document.querySelectorAll('[data-k="' + k + '"]').forEach((el) => { el.textContent = v; });
  }
  function td(tr, f, text, cls) {
    const c = document.createElement("td");
    c.dataset.f = f;
    c.textContent = text;
    if (cls) c.className = cls;
    tr.appendChild(c);
    return c;
  }
  function spark(rates) {
    const w = 180, h = 28;
    const svg = document.createElementNS(SVG, "svg");
    svg.setAttribute("class", "spark");
    svg.setAttribute("width", w);
    svg.setAttribute("height", h);
    svg.setAttribute("viewBox", "0 0 " + w + " " + h);
    svg.setAttribute("role", "img");
    const bg = document.createElementNS(SVG, "rect");
    bg.setAttribute("width", w);
    bg.setAttribute("height", h);
    svg.appendChild(bg);
    const r = rates || [];
    const mx = Math.max(1, ...r);
    const pts = r.map((v, i) => ((i * (w - 1)) / Math.max(1, r.length - 1)).toFixed(1) + "," + (h - 1 - (v / mx) * (h - 3)).toFixed(1));
    const pl = document.createElementNS(SVG, "polyline");
    pl.setAttribute("points", pts.join(" "));
    svg.appendChild(pl);
    const t = document.createElementNS(SVG, "title");
    t.textContent = "peak " + mx.toFixed(1) + " frames/s";
    svg.appendChild(t);
    svg.setAttribute("aria-label", t.textContent);
    return svg;
  }
  function lastFull(rate) {
    return rate && rate.length > 1 ? rate[rate.length - 2] : 0;
  }

  function render(st) {
    const s = st.stats || {}, live = st.live || {};
    $("#venue").textContent = st.venue || "";
    $("#endpoint").textContent = st.endpoint || "";
    $("#uptime").textContent = dur(st.uptime_ns);
    const conns = st.connections || [];
    const up = conns.filter((c) => c.state === "connected").length;
    $("#conn-summary").textContent = up + " of " + conns.length + " connections up";
    setK("frames", String(s.frames || 0));
    setK("frames_per_sec", conns.reduce((a, c) => a + lastFull(c.rate), 0).toFixed(1));
    setK("bytes", bytes(s.frame_bytes || 0));
    setK("dropped", String(s.dropped || 0));
    setK("reconnects", String(s.reconnects || 0));
    setK("stalls", String(s.stalls || 0));
    setK("write_errors", String(s.write_errors || 0));
    setK("hash_mismatches", live.on ? String(live.hash_mismatches || 0) : "off");
    setK("top_mismatches", live.on ? String(live.top_mismatches || 0) : "off");
    setK("live_skipped", live.on ? String(live.skipped || 0) : "off");
    document.querySelectorAll("#totals .card").forEach((card) => {
      const b = card.querySelector("b"), k = b.dataset.k;
      const bad = ["dropped", "write_errors", "hash_mismatches", "top_mismatches", "live_skipped"].includes(k) && b.textContent !== "0" && b.textContent !== "off";
      card.classList.toggle("bad", bad);
    });

    const d = st.disk || {};
    setK("disk_dir", d.dir || "");
    setK("disk_used", bytes(d.used_bytes));
    setK("disk_free", bytes(d.free_bytes));
    setK("disk_rate", d.window_ns > 0 ? bytes(Math.round(d.bytes_per_sec)) + "/s" : "(measuring)");
    setK("disk_ttf", d.time_to_full_ns > 0 ? dur(d.time_to_full_ns) : "–");
    const u = st.upload;
    $("#upload").hidden = !u;
    if (u) {
      setK("upload_target", u.target || "");
      setK("upload_pending", String(u.pending_segments || 0));
      setK("upload_done", String(u.uploaded_files || 0));
      setK("upload_bytes", bytes(u.uploaded_bytes));
      setK("upload_failures", String(u.failures || 0));
      setK("upload_error", u.last_error || "");
    }

    const cb = $("#conns tbody");
    cb.replaceChildren();
    for (const c of conns) {
      const tr = document.createElement("tr");
      tr.dataset.conn = c.conn;
      td(tr, "conn", String(c.conn));
      td(tr, "state", c.state, "state-" + c.state);
      td(tr, "uptime", c.state === "connected" ? dur(c.uptime_ns) : "–");
      td(tr, "reconnects", String(c.reconnects));
      td(tr, "frames", String(c.frames));
      const sp = td(tr, "rate", lastFull(c.rate).toFixed(1) + " ");
      sp.appendChild(spark(c.rate));
      td(tr, "last_frame", c.last_frame_ns ? dur(c.last_frame_age_ns) + " ago" : "none yet");
      td(tr, "stalls", String(c.stalls));
      td(tr, "overloads", String(c.overloads));
      td(tr, "last_error", c.last_error || "", "detail err");
      cb.appendChild(tr);
    }

    const total = st.instruments_total || 0, n = (st.instruments || []).length;
    $("#range").textContent = total ? (st.instruments_offset + 1) + "–" + (st.instruments_offset + n) + " of " + total : "none";
    $("#prev").disabled = !(st.instruments_offset > 0);
    $("#next").disabled = !(st.instruments_offset + n < total);
    const ib = $("#insts tbody");
    ib.replaceChildren();
    for (const i of st.instruments || []) {
      if (filter && !i.instrument.toLowerCase().includes(filter)) continue;
      const tr = document.createElement("tr");
      tr.dataset.inst = i.instrument;
      tr.dataset.conn = i.conn;
      const n = td(tr, "instrument", i.instrument, "inst");
      n.title = i.instrument;
      td(tr, "conn", String(i.conn));
      td(tr, "bid", i.bid_px ? i.bid_sz + " @ " + i.bid_px : "–").dataset.px = i.bid_px || "";
      td(tr, "ask", i.ask_px ? i.ask_sz + " @ " + i.ask_px : "–").dataset.px = i.ask_px || "";
      td(tr, "updated", i.updated_ns ? dur(i.age_ns) + " ago" : "–");
      td(tr, "stalls", String(i.stalls));
      td(tr, "gaps", String(i.gaps));
      td(tr, "hash_mismatches", String(i.hash_mismatches), i.hash_mismatches ? "err" : "");
      td(tr, "hash_checked", i.hash_checked ? i.hash_ok + " of " + i.hash_checked + " ok" : "–");
      let state = !i.has_book ? "no book yet" : i.crossed ? "crossed" : i.valid ? "valid" : "invalid until snapshot";
      if (i.rejected_frames) state += " (" + i.rejected_frames + " frames rejected)";
      const bc = td(tr, "book", state, i.has_book && i.valid && !i.crossed ? "" : "invalid");
      if (i.last_reject) bc.title = "last rejected: " + i.last_reject;
      ib.appendChild(tr);
    }

    const eb = $("#events tbody");
    eb.replaceChildren();
    for (const e of st.events || []) {
      const tr = document.createElement("tr");
      if (e.loss) tr.className = "loss";
      tr.dataset.seq = e.seq;
      td(tr, "when", dur(st.now_ns - e.wall_ns) + " ago");
      td(tr, "seq", String(e.seq));
      td(tr, "conn", String(e.conn));
      td(tr, "kind", e.kind);
      const full = (e.instruments && e.instruments.length ? e.instruments.join(", ") + ": " : "") + (e.detail || "");
      const dc = td(tr, "detail", full.length > 180 ? full.slice(0, 179) + "…" : full, "detail");
      dc.title = full;
      eb.appendChild(tr);
    }
    updates++;
    document.body.dataset.nowNs = String(st.now_ns);
    document.body.dataset.updates = String(updates);
  }

  async function refresh() {
    const url = "status.json?offset=" + offset + "&limit=" + PAGE + "&q=" + encodeURIComponent(filter);
    const resp = await fetch(url, { cache: "no-store" });
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    last = await resp.json();
    $("#stale").hidden = true;
    render(last);
  }

  async function tick() {
    try {
      await refresh();
    } catch (err) {
      if (last) {
        $("#stale-at").textContent = new Date(last.now_ns / 1e6).toLocaleTimeString();
        $("#stale").hidden = false;
      }
    } finally {
      setTimeout(tick, 2000);
    }
  }
  const again = () => refresh().catch(() => {});
  $("#filter").addEventListener("input", (ev) => {
    filter = ev.target.value.trim().toLowerCase();
    offset = 0;
    if (last) render(last);
    again();
  });
  $("#prev").addEventListener("click", () => { offset = Math.max(0, offset - PAGE); again(); });
  $("#next").addEventListener("click", () => { offset += PAGE; again(); });
  tick();
})();
