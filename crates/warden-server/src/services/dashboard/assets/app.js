// The Warden dashboard: polls /ui/api/* every second and renders the
// answers. Every value from the server (resource names above all) is set
// with textContent, never parsed as HTML.
"use strict";

const REFRESH_MS = 1000;
let chosen = null; // the resource whose timeline is shown

function ms(v) {
  if (v === null || v === undefined) return "-";
  if (v < 1000) return v + " ms";
  if (v < 60000) return (v / 1000).toFixed(1) + " s";
  return Math.floor(v / 60000) + " min " + Math.round((v % 60000) / 1000) + " s";
}

function cell(row, value, cls) {
  const td = document.createElement("td");
  td.textContent = value === null || value === undefined ? "-" : String(value);
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

function fill(tableId, items, render) {
  const body = document.querySelector("#" + tableId + " tbody");
  const rows = items.map((item) => {
    const tr = document.createElement("tr");
    render(tr, item);
    return tr;
  });
  body.replaceChildren(...rows);
  const empty = document.getElementById(tableId + "-empty");
  if (empty) empty.hidden = items.length > 0;
}

function pickable(tr, resource) {
  tr.classList.add("pick");
  if (resource === chosen) tr.classList.add("chosen");
  tr.addEventListener("click", () => {
    chosen = resource;
    refresh();
  });
}

async function get(path) {
  const r = await fetch(path, { cache: "no-store", credentials: "same-origin" });
  const type = r.headers.get("content-type") || "";
  const body = type.startsWith("application/json") ? await r.json() : { error: (await r.text()).trim() };
  if (!r.ok) {
    let msg = body.error || r.status + " " + r.statusText;
    if (body.leader_id) msg += " (leader: node " + body.leader_id + " at " + body.leader_addr + ")";
    throw new Error(msg);
  }
  return body;
}

function renderCluster(c) {
  document.getElementById("summary").textContent =
    "cluster " + c.cluster_id + " · served by node " + c.node_id + " · leader " + c.leader_id + " · term " + c.term + " · commit index " + c.commit_index;
  fill("members", c.members, (tr, m) => {
    cell(tr, m.id, "num");
    cell(tr, m.addr, "name");
    cell(tr, m.role);
    cell(tr, m.term || "-", "num");
    cell(tr, m.applied_index, "num");
    cell(tr, m.lag_entries, "num");
    cell(tr, m.last_contact_ms === null ? "never" : ms(m.last_contact_ms), "num");
  });
}

function renderLocks(l) {
  fill("locks", l.locks, (tr, lock) => {
    pickable(tr, lock.resource);
    tr.dataset.resource = lock.resource;
    cell(tr, lock.resource, "name resource");
    const h = lock.holder;
    if (h) {
      cell(tr, h.lease_id, "num");
      cell(tr, h.principal === null ? "(anonymous)" : h.principal, "name");
      cell(tr, h.fencing_token, "num token");
      cell(tr, ms(h.ttl_remaining_ms), "num");
      cell(tr, ms(h.age_ms), "num");
    } else {
      cell(tr, "free", "free holder");
      cell(tr, "-");
      cell(tr, "-", "token");
      cell(tr, "-");
      cell(tr, "-");
    }
    cell(tr, lock.waiters.map((w) => "lease " + w.lease_id + " (" + ms(w.age_ms) + ")").join(", ") || "-");
    cell(tr, lock.lock_delay_remaining_ms ? ms(lock.lock_delay_remaining_ms) : "-", "num");
  });
}

function renderTop(t) {
  fill("top", t.locks, (tr, h) => {
    pickable(tr, h.resource);
    cell(tr, h.resource, "name resource");
    cell(tr, h.queue_length, "num");
    cell(tr, h.queue_length ? ms(h.oldest_waiter_age_ms) : "-", "num");
    cell(tr, h.grants_last_minute, "num");
    cell(tr, h.expiries_last_minute, "num");
    cell(tr, ms(h.wait_p99_ms), "num");
  });
}

function renderTimeline(t) {
  document.getElementById("timeline-resource").textContent = t ? "of " + JSON.stringify(t.resource) : "(choose a lock)";
  const events = t ? t.events.slice().reverse() : [];
  fill("timeline", events, (tr, e) => {
    cell(tr, e.index, "num");
    cell(tr, e.event, "event-" + e.event);
    cell(tr, e.lease_id || "-", "num");
    cell(tr, e.fencing_token || "-", "num");
  });
}

let running = false;
async function refresh() {
  if (running) return;
  running = true;
  const error = document.getElementById("error");
  try {
    const [cluster, locks, top] = await Promise.all([get("/ui/api/cluster"), get("/ui/api/locks"), get("/ui/api/top")]);
    renderCluster(cluster);
    renderLocks(locks);
    renderTop(top);
    renderTimeline(chosen === null ? null : await get("/ui/api/events/" + encodeURIComponent(chosen)));
    error.hidden = true;
    document.getElementById("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    error.textContent = String(e.message || e);
    error.hidden = false;
  } finally {
    running = false;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  refresh();
  setInterval(refresh, REFRESH_MS);
});
