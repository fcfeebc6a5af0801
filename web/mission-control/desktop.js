// A desktop's own page: the live view (noVNC over /vnc/NAME, watch-only
// until "Take over"), its approvals and its audit timeline.
import RFB from "/novnc/core/rfb.js";
import { el, api, human, uptime, clock, actionText, stream, renderApprovals } from "/static/common.js";

const APPLIES = {
  start: (s) => s === "stopped" || s === "saved",
  stop: (s) => s === "running" || s === "paused" || s === "idle",
  pause: (s) => s === "running",
  resume: (s) => s === "paused",
  snapshot: (s) => s === "running" || s === "paused" || s === "stopped" || s === "saved",
};
const name = decodeURIComponent(location.pathname.replace(/^\/desktop\//, ""));
document.title = `${name} · Mission Control`;
document.getElementById("title").textContent = name;
const desk = document.getElementById("desk");
desk.dataset.desktop = name;
const screen = document.getElementById("screen");
const msg = document.getElementById("screen-msg");
const tk = document.querySelector('[data-action="takeover"]');
const mode = document.getElementById("mode");
let rfb = null, takenOver = false, state = null, lastSeq = -1;
const log = []; // the audit trail, oldest first

function connect() {
  const url = (location.protocol === "https:" ? "wss://" : "ws://") + location.host +
    "/vnc/" + encodeURIComponent(name);
  rfb = new RFB(screen, url, { shared: true });
  rfb.viewOnly = !takenOver;
  rfb.scaleViewport = true;
  rfb.background = "#10141c";
  rfb.addEventListener("connect", () => { msg.hidden = true; });
  rfb.addEventListener("disconnect", () => {
    msg.hidden = false;
    msg.textContent = "live view disconnected: retrying…";
    rfb = null;
    setTimeout(connect, 2000);
  });
}

function setTakeover(on) {
  takenOver = on;
  tk.setAttribute("aria-pressed", on ? "true" : "false");
  tk.textContent = on ? "Hand back" : "Take over";
  mode.textContent = on ? "you have control: the agent can only look" : "watching (the agent has control)";
  mode.className = "mode" + (on ? " control" : "");
  screen.classList.toggle("control", on);
  if (rfb) rfb.viewOnly = !on;
}

// A stream snapshot taken before a takeover POST may arrive after its
// reply: it must not flip the button back (the next click would then ask
// for what is already so). While a POST is out the stream's view is
// ignored; a mismatch after it is checked with a fresh GET, applied only
// if no click came in between.
let tkBusy = false, tkGen = 0;

async function verifyTakeover() {
  const g = tkGen;
  try {
    const d = await api("GET", `/api/desktops/${encodeURIComponent(name)}`);
    if (!tkBusy && g === tkGen && !!d.taken_over !== takenOver) setTakeover(!!d.taken_over);
  } catch (e) { /* the stream says when the server is gone */ }
}

tk.addEventListener("click", async () => {
  if (tk.disabled || tkBusy) return;
  tkBusy = true;
  tkGen++;
  tk.disabled = true;
  try {
    const r = await api("POST", `/api/desktops/${encodeURIComponent(name)}/takeover`, { on: !takenOver });
    setTakeover(!!r.takeover);
    if (takenOver && rfb) rfb.focus();
  } catch (e) {
    alert("takeover: " + e.message);
  }
  tkBusy = false;
  tk.disabled = false;
});

for (const what of ["start", "stop", "pause", "resume", "snapshot"]) {
  const b = document.querySelector(`[data-action="${what}"]`);
  b.addEventListener("click", async () => {
    let body = {};
    if (what === "snapshot") {
      const tag = prompt("Snapshot tag:", "mc-" + new Date().toISOString().slice(0, 19).replace(/[-:T]/g, ""));
      if (!tag) return;
      body = { tag };
    }
    b.disabled = true;
    try { await api("POST", `/api/desktops/${encodeURIComponent(name)}/${what}`, body); }
    catch (e) { alert(`${what}: ${e.message}`); }
    b.disabled = false;
  });
}

// "0.5 cores, 2.0 GB, 512 processes, disk 2.0 MB/s; cgroup v1": as set,
// and what the kernel does not enforce (bureau status says the same)
function limitsText(l) {
  const parts = [`${l.cpu} core${l.cpu === 1 ? "" : "s"}`,
    human(l.memory_mb * 1048576), `${l.pids} processes`];
  if (l.disk_bps) parts.push(`disk ${human(l.disk_bps)}/s`);
  if (l.disk_iops) parts.push(`${l.disk_iops} IOPS`);
  if (l.net_rate) parts.push(`network ${human(l.net_rate)}/s`);
  const en = l.enforced;
  let t = parts.join(", ");
  if (en && en.not_enforced) t += `; not enforced here: ${en.not_enforced}`;
  else if (en && en.cgroup) t += `; cgroup ${en.hierarchy}`;
  return t;
}

function facts(d) {
  const f = document.getElementById("facts");
  const g = d.guest || {};
  const rows = [
    ["state", d.state], ["uptime", uptime(d.uptime_s)],
    ["CPU", d.cpu_percent == null ? "–" : d.cpu_percent.toFixed(0) + "%"],
    ["memory", human(d.memory_bytes)], ["disk", human(d.disk_bytes)],
    ["accel", d.accel || "–"], ["endpoint", d.endpoint],
    ["screen", g.screen ? `${g.screen.width}×${g.screen.height}` : "–"],
    ["guest load", g.load ? g.load.map((x) => x.toFixed(2)).join(" ") : "–"],
    ["guest memory", g.memory ?
      `${human(g.memory.total_bytes - g.memory.available_bytes)} of ${human(g.memory.total_bytes)}` : "–"],
    ["allow", d.allow || "everything"], ["approve", d.approve || "nothing"],
    ["kind", d.kind === "attached" ? "attached" : "VM"],
    ["pending", String(d.pending || 0)],
  ];
  if (d.limits) rows.push(["limits", limitsText(d.limits)]);
  f.replaceChildren(...rows.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: v })]));
}

// ---- the audit timeline ----
const list = document.getElementById("log");
const scrub = document.getElementById("scrub");
const scrubImg = document.getElementById("scrub-img");
const scrubCap = document.getElementById("scrub-cap");

function show(i) {
  const a = log[i];
  if (!a) return;
  scrub.value = i;
  for (const li of list.children) li.classList.toggle("sel", Number(li.dataset.seq) === a.seq);
  // the nearest settled screenshot at or before this action
  let s = null;
  for (let k = i; k >= 0 && !s; k--) s = log[k].screenshot_url;
  if (s) scrubImg.src = s; else scrubImg.removeAttribute("src");
  scrubCap.textContent = `#${a.seq} ${clock(a.time)} ${actionText(a)}` + (a.ok || a.event ? "" : ` → ${a.error}`);
}

async function fetchLog() {
  const since = log.length ? log[log.length - 1].seq : 0;
  let more;
  try { more = await api("GET", `/api/desktops/${encodeURIComponent(name)}/log?since=${since}`); }
  catch (e) { return; }
  if (!more.length) return;
  const follow = Number(scrub.value) >= log.length - 1;
  for (const a of more) {
    log.push(a);
    const i = log.length - 1;
    list.prepend(el("li", { "data-seq": a.seq, onclick: () => show(i) },
      a.screenshot_url ? el("img", { src: a.screenshot_url, alt: "", loading: "lazy" }) : el("span", { class: "noshot" }),
      el("span", { class: "txt" }, el("span", { class: "t", text: `#${a.seq} ${clock(a.time)}` }),
        el("span", { class: a.ok || a.event ? "" : "err", text: actionText(a) + (a.ok || a.event ? "" : " → " + a.error) }))));
  }
  scrub.max = log.length - 1;
  if (follow) show(log.length - 1);
}
scrub.addEventListener("input", () => show(Number(scrub.value)));

async function refresh() {
  try {
    const d = await api("GET", `/api/desktops/${encodeURIComponent(name)}`);
    facts(d);
  } catch (e) { /* the stream says when the server is gone */ }
}

stream((s) => {
  const d = s.desktops.find((x) => x.name === name);
  if (!d) { msg.hidden = false; msg.textContent = `no desktop '${name}'`; return; }
  const st = document.querySelector('[data-field="state"]');
  st.textContent = d.state;
  st.className = "state " + d.state;
  if (!tkBusy && !!d.taken_over !== takenOver) verifyTakeover();
  const attached = d.kind === "attached";
  for (const what of ["start", "stop", "pause", "resume", "snapshot"])
    document.querySelector(`[data-action="${what}"]`).disabled = attached || !APPLIES[what](d.state);
  tk.disabled = tkBusy || !d.agent;
  tk.title = d.agent ? "" : "no host agent runs for this desktop: takeover needs one";
  if (d.state !== state) { state = d.state; refresh(); }
  const seq = d.last_action ? d.last_action.seq : 0;
  if (seq !== lastSeq) { lastSeq = seq; fetchLog(); refresh(); }
  renderApprovals(s.approvals, (a) => a.desktop === name);
});

setTakeover(false);
refresh();
connect();
