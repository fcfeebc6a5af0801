// Mission Control: helpers both pages share. Everything an agent could
// have written (requests, summaries, titles) goes in with textContent,
// never as HTML.

export function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : v);
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

// Log out: the server ends the session and clears the cookie; leaving
// the page closes its event stream and live view.
const logout = document.getElementById("logout");
if (logout) {
  logout.addEventListener("click", async () => {
    await fetch("/logout", { method: "POST", credentials: "same-origin" }).catch(() => {});
    location.replace("/");
  });
}

export async function api(method, path, body) {
  const opt = { method, headers: {}, credentials: "same-origin" };
  if (body !== undefined) {
    opt.headers["Content-Type"] = "application/json";
    opt.body = JSON.stringify(body);
  }
  const r = await fetch(path, opt);
  const j = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error((j.error && j.error.message) || r.statusText);
  return j;
}

export function human(bytes) {
  if (bytes == null) return "–";
  const u = ["B", "K", "M", "G", "T"];
  let v = bytes, i = 0;
  while (v >= 1024 && i < u.length - 1) { v /= 1024; i++; }
  return (i ? v.toFixed(1) : v.toFixed(0)) + u[i];
}

export function uptime(s) {
  if (s == null) return "–";
  const d = Math.floor(s / 86400), h = Math.floor(s % 86400 / 3600),
    m = Math.floor(s % 3600 / 60);
  if (d) return `${d}d ${h}h`;
  if (h) return `${h}h ${m}m`;
  return `${m}m ${Math.floor(s % 60)}s`;
}

export function clock(t) {
  return new Date(t * 1000).toLocaleTimeString([], { hour12: false });
}

export function actionText(a) {
  if (!a) return "";
  // An operator's event, a count of requests without a token, a request.
  if (a.event === "takeover") return a.on ? "operator took over" : "operator handed control back";
  if (a.event) return String(a.event);
  if (!a.tool) return a.count ? `${a.count} requests without a valid token` : String(a.error || "?");
  return a.tool + (a.action ? "." + a.action : "") + (a.summary ? " " + a.summary : "") +
    (a.approval ? ` [${a.approval}]` : "") + (a.ask ? ` [${a.ask}]` : "");
}

// The event stream: calls onState with every snapshot; shows the link's
// health in #conn.
export function stream(onState) {
  const conn = document.getElementById("conn");
  const es = new EventSource("/api/events");
  es.addEventListener("state", (ev) => {
    conn.textContent = "live";
    conn.className = "status live";
    onState(JSON.parse(ev.data));
  });
  es.onerror = () => {
    conn.textContent = "reconnecting…";
    conn.className = "status down";
  };
  return es;
}

// The agent's question: its message, a text box to answer, Take over
// beside it (the operator may need to act on the desktop first: a
// CAPTCHA, a second factor, a login).
function askCard(a, onDone) {
  const text = el("input", { placeholder: "your answer", "aria-label": "answer", "data-field": "answer" });
  const send = async (body) => {
    try {
      await api("POST", `/api/approvals/${encodeURIComponent(a.desktop)}/${encodeURIComponent(a.approval)}`, body);
    } catch (e) {
      alert(e.message);
    }
    onDone && onDone();
  };
  text.addEventListener("keydown", (e) => { if (e.key === "Enter") send({ answer: text.value }); });
  return el("div", { class: "approval ask", "data-approval": a.approval, "data-desktop-name": a.desktop, "data-kind": "ask" },
    el("div", {},
      el("div", { class: "what", text: "the agent asks" }),
      el("div", { class: "meta", text: `desktop ${a.desktop} · question ${a.approval} · waiting since ${clock(a.since)}` })),
    el("div", { class: "decide" },
      text,
      el("button", { class: "approve", "data-action": "answer", onclick: () => send({ answer: text.value }) }, "Answer"),
      el("button", { class: "deny", "data-action": "deny", onclick: () => send({ allow: false }) }, "Decline"),
      el("a", { class: "button", "data-action": "takeover", href: `/desktop/${encodeURIComponent(a.desktop)}` }, "Take over")),
    el("pre", { text: a.message }));
}

// One pending approval, with approve and deny (or a question, with its
// answer).
export function approvalCard(a, onDone) {
  if (a.kind === "ask") return askCard(a, onDone);
  const reason = el("input", { placeholder: "reason (optional)", "aria-label": "reason" });
  const decide = async (allow) => {
    try {
      await api("POST", `/api/approvals/${encodeURIComponent(a.desktop)}/${encodeURIComponent(a.approval)}`,
        { allow, reason: reason.value });
    } catch (e) {
      alert(e.message);
    }
    onDone && onDone();
  };
  // Too large to list whole (over 64 KiB): its size, SHA-256 and ends.
  let req = a.request === null && a.head !== undefined
    ? `too large to show whole: ${a.bytes} bytes of JSON, sha256 ${a.sha256}\n` +
      `first KiB:\n${a.head}\n…\nlast KiB:\n${a.tail}`
    : a.request;
  if (a.request !== null) {
    try { req = JSON.stringify(a.request, null, 2); } catch (e) { /* shown as is */ }
  }
  return el("div", { class: "approval", "data-approval": a.approval, "data-desktop-name": a.desktop },
    el("div", {},
      el("div", { class: "what", text: a.tool + (a.action ? "." + a.action : "") }),
      el("div", { class: "meta", text: `desktop ${a.desktop} · approval ${a.approval} · waiting since ${clock(a.since)}` })),
    el("div", { class: "decide" },
      reason,
      el("button", { class: "approve", "data-action": "approve", onclick: () => decide(true) }, "Approve"),
      el("button", { class: "deny", "data-action": "deny", onclick: () => decide(false) }, "Deny")),
    el("pre", { text: req }));
}

export function renderApprovals(list, filter) {
  const box = document.getElementById("approvals");
  const sec = document.getElementById("approvals-section");
  const mine = list.filter(filter || (() => true));
  const have = new Set(mine.map((a) => a.approval));
  for (const c of [...box.children])
    if (!have.has(c.dataset.approval)) c.remove();
  for (const a of mine)
    if (!box.querySelector(`[data-approval="${CSS.escape(a.approval)}"]`))
      box.append(approvalCard(a));
  sec.hidden = mine.length === 0;
  const n = document.getElementById("approval-count");
  if (n) n.textContent = mine.length;
}
