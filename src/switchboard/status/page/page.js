// The live status page: renders /status snapshots pushed over /status/events (SSE), falling
// back to polling /status every second. Every value is set with textContent: message texts
// and names come from strangers and are never parsed as HTML.
"use strict";

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text === null || text === undefined ? "" : String(text);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

// The server paints the page first (switchboard/status/paint.py); these render the same cells.
const EMPTY = {
  connectors: "No connectors are configured.",
  channels: "No channels yet: a connector's channels appear once it has connected and " +
    "registered them.",
  agents: "No agents are configured.",
  traffic: "Nothing has come in or gone out yet.",
  refusals: "No refusals: every request of the connectors was taken.",
};

// A moment with its date, in UTC (as the server paints it): "2026-12-05 11:45:50 UTC".
function clock(t) {
  return t ? new Date(t * 1000).toISOString().slice(0, 19).replace("T", " ") + " UTC" : "";
}

function dated(t, text) {
  return text ? (clock(t) + " " + text).trim() : "";
}

function dialect(c) {
  const d = c.dialect || "", v = c.protocol_version || "";
  if (!v || d.includes(v)) return d;
  return d ? d + " (" + v + ")" : v;
}

function publishes(c) {
  return Object.entries(c.publishes || {}).sort().map(([k, v]) => k + " " + v).join(", ") || "0";
}

function fill(id, rows, render) {
  const body = document.querySelector("#" + id + " tbody");
  const fresh = document.createElement("tbody");
  for (const item of rows) {
    const tr = document.createElement("tr");
    render(tr, item);
    fresh.appendChild(tr);
  }
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    tr.className = "empty";
    const td = cell(tr, EMPTY[id]);
    td.colSpan = document.querySelectorAll("#" + id + " thead th").length;
    fresh.appendChild(tr);
  }
  body.replaceWith(fresh);
}

function render(s) {
  const ready = document.getElementById("ready");
  ready.textContent = s.ready ? "ready" : "not ready: " + s.not_ready.join("; ");
  ready.className = "badge " + (s.ready ? "ok" : "bad");
  document.getElementById("summary").textContent =
    "up " + Math.round(s.uptime) + " s · in " + s.traffic.messages_in +
    " · out " + s.traffic.publishes_out + " · refusals " + s.traffic.refusals;
  fill("connectors", s.connectors, (tr, c) => {
    tr.dataset.connector = c.id;
    cell(tr, c.id);
    cell(tr, c.state, "state state-" + c.state);
    cell(tr, c.pid, "pid");
    cell(tr, dialect(c), "dialect");
    cell(tr, c.channels, "channels");
    cell(tr, c.restarts, "restarts");
    cell(tr, c.messages_in, "messages-in");
    cell(tr, publishes(c), "out");
    cell(tr, c.refusals);
    cell(tr, c.last_exit, "last-exit");
    cell(tr, dated(c.last_error_at, c.last_error), "text");
    cell(tr, dated(c.last_refusal_at, c.last_refusal), "text");
  });
  document.getElementById("channels-total").textContent =
    s.channels_total > s.channels.length
      ? "(" + s.channels.length + " of " + s.channels_total + " shown)"
      : "(" + s.channels_total + ")";
  fill("channels", s.channels, (tr, ch) => {
    tr.dataset.channel = ch.connector + ":" + ch.id;
    // Only a decision the channel does not follow yet is marked; "default" (nobody decided)
    // is never a problem.
    const wanted = { open: "open", "tuned-out": "open", closed: "closed" }[ch.desired];
    if (wanted !== undefined && wanted !== ch.confirmed) tr.className = "mismatch";
    cell(tr, ch.connector);
    cell(tr, ch.id);
    cell(tr, ch.label);
    cell(tr, ch.direction);
    cell(tr, ch.desired, "desired");
    cell(tr, ch.confirmed, "confirmed");
  });
  fill("agents", s.agents, (tr, a) => {
    cell(tr, a.handle);
    cell(tr, a.sessions);
    cell(tr, clock(a.last_active));
  });
  const st = s.store;
  document.getElementById("store").textContent =
    st.path + " · " + (st.total_bytes / 1048576).toFixed(2) + " MiB (WAL " +
    (st.wal_bytes / 1048576).toFixed(2) + ") · backlog " + st.write_backlog +
    " · seq " + st.latest_seq + (st.open ? "" : " · CLOSED") +
    (st.storage_error ? " · REFUSING WRITES: " + st.storage_error : "");
  fill("traffic", s.recent_traffic.slice().reverse(), (tr, m) => {
    tr.className = "traffic-" + m.direction;
    cell(tr, clock(m.at));
    cell(tr, m.direction === "out" ? ("→ " + (m.outcome || "")).trim() : "←");
    cell(tr, m.connector);
    cell(tr, m.channel);
    cell(tr, m.author);
    cell(tr, m.text, "text");
  });
  fill("refusals", s.recent_refusals.slice().reverse(), (tr, r) => {
    cell(tr, clock(r.at));
    cell(tr, r.connector);
    cell(tr, r.kind);
    cell(tr, r.method);
    cell(tr, r.reason, "text");
    cell(tr, r.count);
  });
}

function live(text, ok) {
  const badge = document.getElementById("live");
  badge.textContent = text;
  badge.className = "badge " + (ok ? "ok" : "bad");
}

let polling = null;

function poll() {
  if (polling !== null) return;
  polling = setInterval(async () => {
    try {
      const answer = await fetch("/status", { credentials: "same-origin" });
      if (answer.ok) {
        render(await answer.json());
        live("polling", true);
      } else {
        live("status " + answer.status, false);
      }
    } catch (e) {
      live("unreachable", false);
    }
  }, 1000);
}

function start() {
  if (!window.EventSource) {
    poll();
    return;
  }
  const source = new EventSource("/status/events");
  source.addEventListener("status", (e) => {
    render(JSON.parse(e.data));
    live("live", true);
  });
  source.onerror = () => live("reconnecting", false);
}

document.addEventListener("DOMContentLoaded", start);
