// Mission Control's overview: one card per desktop, pending approvals,
// live from /api/events.
import { el, api, human, uptime, clock, actionText, stream, renderApprovals } from "/static/common.js";

const cards = new Map(); // name -> {card, parts, frame, lastSeq}
const APPLIES = {
  // which buttons make sense in which state
  start: (s) => s === "stopped" || s === "saved",
  stop: (s) => s === "running" || s === "paused" || s === "idle",
  pause: (s) => s === "running",
  resume: (s) => s === "paused",
  snapshot: (s) => s === "running" || s === "paused" || s === "stopped" || s === "saved",
};

function makeCard(d) {
  const p = { d };
  const act = async (what, btn) => {
    let body = {};
    if (what === "stop" && p.d.ephemeral &&
        !confirm(`Discard the ephemeral fork ${d.name}? Its disks and everything it did go with it.`)) return;
    if (what === "snapshot") {
      const tag = prompt(`Snapshot tag for ${d.name}:`, "mc-" + new Date().toISOString().slice(0, 19).replace(/[-:T]/g, ""));
      if (!tag) return;
      body = { tag };
    }
    btn.disabled = true;
    p.msg.textContent = "";
    try {
      await api("POST", `/api/desktops/${encodeURIComponent(d.name)}/${what}`, body);
    } catch (e) {
      p.msg.textContent = `${what}: ${e.message}`;
    }
    btn.disabled = false;
  };
  p.img = el("img", { alt: `screen of ${d.name}`, hidden: true });
  p.none = el("div", { class: "none", text: "no screen" });
  p.badge = el("span", { class: "badge", hidden: true, text: "taken over" });
  p.state = el("span", { class: "state", "data-field": "state" });
  p.stats = el("div", { class: "stats" });
  p.actions = el("ul", { class: "actions-list", "data-field": "actions" });
  p.msg = el("div", { class: "msg", "data-field": "message" });
  p.buttons = {};
  const bar = el("div", { class: "buttons" });
  for (const what of ["start", "stop", "pause", "resume", "snapshot"]) {
    const b = el("button", { "data-action": what }, what[0].toUpperCase() + what.slice(1));
    b.addEventListener("click", () => act(what, b));
    p.buttons[what] = b;
    bar.append(b);
  }
  bar.append(el("a", { class: "open btn primary", "data-action": "open",
    href: `/desktop/${encodeURIComponent(d.name)}` }, "Open"));
  // (in the card only while it is a fork)
  p.forkOf = el("div", { class: "fork-of", "data-field": "fork_of" });
  const card = el("article", { class: "desktop", "data-desktop": d.name },
    el("a", { class: "thumb", href: `/desktop/${encodeURIComponent(d.name)}` }, p.img, p.none, p.badge),
    el("div", { class: "d-head" }, el("span", { class: "name", text: d.name }), p.state,
      el("span", { class: "kind", text: d.kind === "attached" ? "external daemon" : "VM" })),
    p.stats, p.actions, p.msg, bar);
  const c = { card, p, frame: -2, lastSeq: -1, fork: null };
  markFork(c, d);
  return c;
}

// A fork's mark and an ephemeral fork's Discard, as the latest state says
// (not only as the first one the card was made from: a stream that began
// before desktop.json said so, say).
function markFork(c, d) {
  const key = `${d.fork_of || ""}|${!!d.ephemeral}`;
  c.p.d = d;
  if (c.fork === key) return;
  c.fork = key;
  c.card.classList.toggle("fork", !!d.fork_of);
  if (d.fork_of) {
    c.p.forkOf.textContent = `fork of ${d.fork_of}${d.ephemeral ? " · ephemeral" : ""}`;
    if (!c.p.forkOf.parentNode) c.p.stats.before(c.p.forkOf);
  } else {
    c.p.forkOf.remove();
  }
  // an ephemeral fork is never saved: its stop discards it
  const b = c.p.buttons.stop;
  b.textContent = d.ephemeral ? "Discard" : "Stop";
  b.dataset.action = d.ephemeral ? "discard" : "stop";
}

function stat(label, value) {
  return el("span", {}, label + " ", el("b", { text: value }));
}

async function refreshActions(name, c, seq) {
  try {
    const log = await api("GET", `/api/desktops/${encodeURIComponent(name)}/log?since=${Math.max(0, seq - 3)}`);
    c.p.actions.replaceChildren(...log.slice(-3).reverse().map((a) =>
      el("li", { "data-seq": a.seq },
        el("span", { class: "t", text: clock(a.time) }),
        el("span", { class: a.ok ? "" : "err", text: actionText(a) + (a.ok ? "" : " → " + a.error) }))));
  } catch (e) { /* the next change retries */ }
}

// A fork's card goes right after its parent's and the parent's other
// forks (the list is in name order, so a parent may come later: then at
// the end, and moved once the parent's card is there).
// Desktops are grouped by the host they run on (local first, then by
// name): a group is a heading and a grid of its own.
function hostGroup(host) {
  const all = document.getElementById("desktops");
  host = host || "local";
  for (const g of all.children) if (g.dataset.host === host) return g.lastElementChild;
  const g = el("section", { class: "host-group", "data-host": host },
    el("h3", { class: "host-name", text: host === "local" ? "host local (bureau's own QEMU)" : `host ${host}` }),
    el("div", { class: "desktops" }));
  const after = [...all.children].find((x) =>
    host !== "local" && (x.dataset.host !== "local" && x.dataset.host > host));
  if (host === "local") all.prepend(g); else if (after) after.before(g); else all.append(g);
  return g.lastElementChild;
}

function place(card, d) {
  const list = hostGroup(d.host);
  const parent = d.fork_of && cards.get(d.fork_of);
  if (!parent) { list.append(card); return; }
  let after = parent.card;
  while (after.nextElementSibling && after.nextElementSibling.classList.contains("fork") &&
         after.nextElementSibling !== card)
    after = after.nextElementSibling;
  after.after(card);
}

function update(d) {
  let c = cards.get(d.name);
  if (!c) {
    c = makeCard(d);
    cards.set(d.name, c);
    place(c.card, d);
  } else if ((c.card.closest(".host-group") || {}).dataset?.host !== (d.host || "local")) {
    place(c.card, d); // moved to another host
  }
  markFork(c, d);
  const p = c.p;
  p.state.textContent = d.state;
  p.state.className = "state " + d.state;
  p.badge.hidden = !d.taken_over;
  p.stats.replaceChildren(
    stat("up", uptime(d.uptime_s)),
    stat("CPU", d.cpu_percent == null ? "–" : d.cpu_percent.toFixed(0) + "%"),
    stat("mem", human(d.memory_bytes)),
    stat("disk", human(d.disk_bytes)),
    stat("accel", d.accel || "–"),
    stat("port", d.endpoint.replace(/^tcp:\/\/127\.0\.0\.1:/, "")));
  for (const [what, b] of Object.entries(p.buttons)) {
    b.disabled = d.kind === "attached" || !APPLIES[what](d.state);
    b.title = d.kind === "attached" ? "an attached desktop runs outside bureau" : "";
  }
  if (d.frame !== c.frame && d.frame >= 0) {
    // A new frame: the thumbnail follows the screen; an idle screen
    // brings no new frame and costs nothing.
    c.frame = d.frame;
    p.img.src = `/api/desktops/${encodeURIComponent(d.name)}/thumbnail?f=${d.frame}`;
    p.img.hidden = false;
    p.none.hidden = true;
  }
  if (d.frame < 0) { p.img.hidden = true; p.none.hidden = false; }
  const seq = d.last_action ? d.last_action.seq : 0;
  if (seq !== c.lastSeq) {
    c.lastSeq = seq;
    refreshActions(d.name, c, seq);
  }
}

stream((s) => {
  const names = new Set(s.desktops.map((d) => d.name));
  for (const [n, c] of cards) if (!names.has(n)) { c.card.remove(); cards.delete(n); }
  for (const g of [...document.getElementById("desktops").children])
    if (!g.lastElementChild.children.length) g.remove();
  s.desktops.forEach(update);
  // forks under their parents, whatever order they came in
  for (const d of s.desktops)
    if (d.fork_of && cards.has(d.fork_of)) place(cards.get(d.name).card, d);
  document.getElementById("no-desktops").hidden = s.desktops.length > 0;
  renderApprovals(s.approvals);
});
