// The plugin's tools, built by its real entry with a fake OpenClaw `api`,
// executed against the real build/bureaud on a private Xvfb. Effects are
// checked by others: xevlog for input, ImageMagick for images, the file
// system for files.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import * as cuSdk from "openclaw/plugin-sdk/computer-use";
import entry from "../index.js";
import { EvLog, BUILD, ROOT, fakeApi, hasTool, identifyPng, killAll, sleep, startDaemon, startXvfb } from "./harness.js";

const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, "host-bridge/openclaw/openclaw.plugin.json"), "utf8"));
const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, "host-bridge/openclaw/package.json"), "utf8"));

let X;
let D;
let api;

function tool(name, a = api) {
	const t = a.tools.get(name);
	assert.ok(t, `no tool ${name}`);
	return t;
}

async function run(name, params, a = api) {
	return tool(name, a).execute(`call-${randomUUID()}`, params);
}

async function rejectsWith(promise, code, word) {
	await assert.rejects(promise, (e) => {
		assert.equal(e.code, code, `expected ${code}, got ${e.code}: ${e.message}`);
		assert.ok(e.message.startsWith(`${code}: `), e.message);
		if (word)
			assert.ok(e.message.includes(word), `message '${e.message}' does not name '${word}'`);
		return true;
	});
}

before(async () => {
	X = await startXvfb("1280x800");
	D = await startDaemon(X, ["--scale", "none", "--no-cursor"]);
	api = fakeApi({ url: D.url, token: D.token, timeout: 10 });
	entry.register(api);
});

after(killAll);


describe("registration", () => {
	it("registers exactly the manifest's contracts.tools", () => {
		assert.deepEqual([...api.tools.keys()].sort(), [...manifest.contracts.tools].sort());
		for (const t of api.tools.values()) {
			assert.equal(typeof t.execute, "function");
			assert.equal(t.parameters.type, "object");
			assert.ok(t.description.length > 20);
			assert.ok(t.name.startsWith("bureau_"), t.name);
		}
		assert.equal(entry.id, manifest.id);
		assert.deepEqual(pkg.openclaw.extensions, ["./index.js"]);
		assert.equal(api.nodeHostCommands.size, 0, "computer use must be opt-in");
	});

	it("validates its config with the manifest's schema", () => {
		assert.equal(entry.configSchema.safeParse({ url: "tcp://127.0.0.1:1", token: "x" }).success, true);
		assert.equal(entry.configSchema.safeParse({ url: 5 }).success, false);
		assert.equal(entry.configSchema.safeParse({ bogus: true }).success, false);
	});
});

describe("bureau_computer", () => {
	it("screenshot comes back as an image block and a size/frame line", async () => {
		const r = await run("bureau_computer", { action: "screenshot" });
		assert.equal(r.content.length, 2);
		const [line, img] = r.content;
		assert.equal(line.type, "text");
		assert.match(line.text, /^1280x800 image\/png, frame \d+$/);
		assert.equal(img.type, "image");
		assert.equal(img.mimeType, "image/png");
		assert.equal(identifyPng(img.data), "PNG 1280 800");
		assert.equal(r.details.image.width, 1280);
		assert.equal(r.details.image.data, undefined, "no base64 copy in details");
		assert.equal(r.details.ok, undefined, "ok is a reserved details name");
	});

	it("left_click lands where asked (seen by xevlog)", async () => {
		const ev = new EvLog(X, "400x300+100+100");
		try {
			await ev.ready();
			const r = await run("bureau_computer", { action: "left_click", coordinate: [173, 219] });
			assert.equal(r.content[1].type, "image", "a screenshot after the click");
			await ev.wait((l) => l.startsWith("button_release button=1"), "the release");
			const presses = ev.events("button_press");
			assert.equal(presses.length, 1, JSON.stringify(presses));
			assert.equal(presses[0].button, "1");
			assert.equal(Number(presses[0].root_x), 173);
			assert.equal(Number(presses[0].root_y), 219);

			const c = await run("bureau_computer", { action: "cursor_position" });
			assert.equal(c.content[0].text, "X=173,Y=219");
			assert.deepEqual(c.details.coordinate, [173, 219]);

			// The pointer is in the window, so xevlog has the focus: type.
			ev.lines = [];
			await run("bureau_computer", { action: "type", text: "hé", screenshot: false });
			await ev.wait((l) => l.startsWith("key_release") && l.endsWith("text=é"), "é typed");
			const typed = ev.events("key_press").map((e) => e.text);
			assert.deepEqual(typed, ["h", "é"]);

			ev.lines = [];
			await run("bureau_computer", { action: "right_click", coordinate: [300, 250], text: "shift", screenshot: false });
			await ev.wait((l) => l.startsWith("button_release button=3"), "right click");
			const p = ev.events("button_press")[0];
			assert.equal(Number(p.root_x), 300);
			assert.ok(Number.parseInt(p.state, 16) & 1, "shift held");
		} finally {
			ev.stop();
		}
	});

	it("wait takes its time, not the call timeout", async () => {
		const t0 = Date.now();
		const r = await run("bureau_computer", { action: "wait", duration: 0.5 });
		assert.ok(Date.now() - t0 >= 450);
		assert.equal(r.content[1].type, "image");
	});

	it("daemon errors are thrown with the daemon's code and message", async () => {
		await rejectsWith(run("bureau_computer", { action: "left_click", coordinate: [5000, 10] }), "out_of_bounds", "coordinate");
		await rejectsWith(run("bureau_computer", { action: "scroll", scroll_direction: "sideways" }), "invalid_argument", "scroll_direction");
		const stale = await run("bureau_computer", { action: "screenshot" });
		const frame = Number(stale.content[0].text.match(/frame (\d+)/)[1]);
		spawnSync("xsetroot", ["-solid", "#336699"], { env: X.env });
		// The daemon numbers the changed screen once its damage has come
		// in and a frame was taken: not at a fixed time after xsetroot
		// (300 ms was too short once in CI). Until then the old frame may
		// still be the latest, and the move runs (its settled screenshot
		// then is the latest): retry, bounded.
		let refused = null;
		for (const t0 = Date.now(); !refused && Date.now() - t0 < 20000; await sleep(100)) {
			try {
				await run("bureau_computer", { action: "mouse_move", coordinate: [5, 5], frame });
			} catch (e) {
				refused = e;
			}
		}
		await rejectsWith(Promise.reject(refused || new Error("frame never refused")), "invalid_argument", "frame");
	});

	it("a wrong token is unauthorized; a dead daemon is connect_failed within the timeout", async () => {
		const bad = fakeApi({ url: D.url, token: "wrong", timeout: 5 });
		entry.register(bad);
		await rejectsWith(run("bureau_computer", { action: "screenshot" }, bad), "unauthorized");
		const dead = fakeApi({ url: `tcp://127.0.0.1:${D.port + 1000}`, timeout: 1 });
		entry.register(dead);
		const t0 = Date.now();
		await rejectsWith(run("bureau_computer", { action: "screenshot" }, dead), "connect_failed", "no connection");
		const dt = Date.now() - t0;
		assert.ok(dt >= 900 && dt < 3000, `took ${dt} ms`);
		const none = fakeApi({});
		entry.register(none);
		await rejectsWith(run("bureau_computer", { action: "screenshot" }, none), "invalid_argument", "url");
	});
});

describe("bureau_bash", () => {
	it("runs a command in the persistent shell", async (t) => {
		if (!hasTool(D, "bash")) {
			t.skip("this bureaud has no bash tool (system info lists no 'bash' capability)");
			return;
		}
		const dir = fs.mkdtempSync(path.join(D.dir, "bash-"));
		const r1 = await run("bureau_bash", { command: `cd ${dir} && echo hello > made-by-bash && export OC_T=42` });
		assert.equal(r1.details.exit_code, 0);
		const r2 = await run("bureau_bash", { command: "pwd; echo $OC_T; cat made-by-bash" });
		assert.equal(r2.content[0].text.trim(), `${dir}\n42\nhello`);
		assert.equal(fs.readFileSync(path.join(dir, "made-by-bash"), "utf8"), "hello\n");
		const r3 = await run("bureau_bash", { command: "exit 3" });
		assert.match(r3.content[0].text, /\[exit code 3\]/);
	});

	it("a missing command is refused before the daemon", async () => {
		await rejectsWith(run("bureau_bash", {}), "invalid_argument", "command");
	});
});

describe("bureau_accessibility", () => {
	it("is registered and reaches the daemon's accessibility tool", async () => {
		assert.ok(hasTool(D, "accessibility"));
		// An element no tree gave (or no accessibility bus here): the
		// daemon's not_found either way, with its message.
		await rejectsWith(run("bureau_accessibility", { action: "do", id: 999999 }), "not_found");
	});
});

describe("bureau_edit and bureau_files", () => {
	it("edits a file, the change is on disk", async () => {
		const dir = fs.mkdtempSync(path.join(D.dir, "edit-"));
		const f = path.join(dir, "notes.txt");
		await run("bureau_edit", { command: "create", path: f, file_text: "one\ntwo\nthree\n" });
		assert.equal(fs.readFileSync(f, "utf8"), "one\ntwo\nthree\n");
		const v = await run("bureau_edit", { command: "view", path: f, view_range: [2, 2] });
		assert.match(v.content[0].text, /\t?two/);
		await run("bureau_edit", { command: "str_replace", path: f, old_str: "two", new_str: "deux" });
		assert.equal(fs.readFileSync(f, "utf8"), "one\ndeux\nthree\n");
		await rejectsWith(run("bureau_edit", { command: "str_replace", path: f, old_str: "absent", new_str: "x" }), "invalid_argument");
		await run("bureau_edit", { command: "undo_edit", path: f });
		assert.equal(fs.readFileSync(f, "utf8"), "one\ntwo\nthree\n");
	});

	it("writes, reads, lists, removes; missing files are not_found", async () => {
		const dir = fs.mkdtempSync(path.join(D.dir, "files-"));
		const f = path.join(dir, "sub", "a.txt");
		await run("bureau_files", { action: "write", path: f, text: "Grüße ✓\n", parents: true });
		assert.equal(fs.readFileSync(f, "utf8"), "Grüße ✓\n");
		const r = await run("bureau_files", { action: "read", path: f });
		assert.equal(r.content[0].text, `${f}: ${Buffer.byteLength("Grüße ✓\n")} of ${Buffer.byteLength("Grüße ✓\n")} bytes\nGrüße ✓\n`);
		const shot = await run("bureau_computer", { action: "screenshot" });
		const png = path.join(dir, "shot.png");
		await run("bureau_files", { action: "write", path: png, data: shot.content[1].data });
		assert.equal(spawnSync("identify", ["-format", "%m %w %h", png]).stdout.toString(), "PNG 1280 800");
		const img = await run("bureau_files", { action: "read", path: png });
		assert.equal(img.content[1].type, "image");
		assert.equal(img.content[1].mimeType, "image/png");
		const l = await run("bureau_files", { action: "list", path: dir });
		assert.match(l.content[0].text, /^file\t\d+\tshot\.png$/m);
		assert.match(l.content[0].text, /^dir\t\d*\tsub$/m);
		await run("bureau_files", { action: "remove", path: path.join(dir, "sub"), recursive: true });
		assert.equal(fs.existsSync(path.join(dir, "sub")), false);
		await rejectsWith(run("bureau_files", { action: "read", path: f }), "not_found");
	});
});

describe("bureau_desktop and desktop names", () => {
	it("a desktop name resolves through $BUREAU_HOME/NAME like `bureau call NAME`", async () => {
		const home = fs.mkdtempSync(path.join(D.dir, "home-"));
		fs.mkdirSync(path.join(home, "work1"));
		fs.writeFileSync(path.join(home, "work1", "endpoint"), `${D.url}\n`);
		fs.writeFileSync(path.join(home, "work1", "token"), D.token, { mode: 0o600 });
		const a = fakeApi({ desktop: "work1", bureauHome: home });
		entry.register(a);
		const r = await run("bureau_computer", { action: "screenshot" }, a);
		assert.equal(r.content[1].type, "image");
		const b = fakeApi({ desktop: "nosuch", bureauHome: home });
		entry.register(b);
		await rejectsWith(run("bureau_computer", { action: "screenshot" }, b), "not_found", "nosuch");
		const c = fakeApi({ desktop: "../etc", bureauHome: home });
		entry.register(c);
		await rejectsWith(run("bureau_computer", { action: "screenshot" }, c), "invalid_argument", "desktop name");
	});

	it("list goes through the bureau CLI, or says plainly that it lacks desktop management", async () => {
		const help = spawnSync(path.join(BUILD, "bureau"), ["help"]).stdout.toString();
		const home = fs.mkdtempSync(path.join(D.dir, "dhome-"));
		const a = fakeApi({ bureauHome: home, bureauCli: path.join(BUILD, "bureau") });
		entry.register(a);
		if (/bureau ls/.test(help)) {
			const r = await run("bureau_desktop", { action: "list" }, a);
			assert.equal(r.content[0].type, "text");
		} else {
			await rejectsWith(run("bureau_desktop", { action: "list" }, a), "unknown_action", "no 'ls' command");
			await rejectsWith(run("bureau_desktop", { action: "start", name: "x" }, a), "unknown_action", "no 'start' command");
		}
		await rejectsWith(run("bureau_desktop", { action: "start", name: "bad name" }, a), "invalid_argument", "bad name");
		const gone = fakeApi({ bureauCli: "/nonexistent/bureau" });
		entry.register(gone);
		await rejectsWith(run("bureau_desktop", { action: "list" }, gone), "not_found", "/nonexistent/bureau");
	});
});

describe("computer-use provider", () => {
	it("registers screen.snapshot and computer.act; they drive bureaud within the SDK's contract", async () => {
		const a = fakeApi({ url: D.url, token: D.token, computerUse: true });
		entry.register(a);
		const snap = a.nodeHostCommands.get("screen.snapshot");
		const act = a.nodeHostCommands.get("computer.act");
		assert.ok(snap && act, "both commands registered");
		assert.equal(act.dangerous, true);
		const desc = act.computerUse();
		assert.ok(cuSdk.compileComputerUseValidator(cuSdk.ComputerUseCapabilityDescriptorSchema)(desc), JSON.stringify(desc));
		assert.equal(act.isAvailable(), true);

		const executionId = randomUUID();
		const s = JSON.parse(await snap.handle(JSON.stringify({ executionId })));
		assert.ok(cuSdk.compileComputerUseValidator(cuSdk.ScreenSnapshotResultSchema)(s));
		assert.equal(identifyPng(s.base64), "PNG 1280 800");

		const ev = new EvLog(X, "300x200+600+400");
		try {
			await ev.ready();
			const r = JSON.parse(await act.handle(JSON.stringify({ executionId, action: "double_click", x: 650, y: 450, displayFrameId: s.displayFrameId })));
			assert.ok(cuSdk.compileComputerUseValidator(cuSdk.ComputerActResultSchema)(r), JSON.stringify(r).slice(0, 300));
			assert.equal(r.ok, true);
			assert.equal(r.observation.kind, "screen");
			await ev.wait((l) => ev.events("button_release").length === 2, "two releases");
			for (const p of ev.events("button_press"))
				assert.deepEqual([Number(p.root_x), Number(p.root_y)], [650, 450]);
			const c = JSON.parse(await act.handle(JSON.stringify({ executionId, action: "get_cursor_position" })));
			assert.deepEqual(c.details.coordinate, [650, 450]);
		} finally {
			ev.stop();
		}
		await assert.rejects(act.handle(JSON.stringify({ executionId, action: "left_click", x: 9000, y: 1 })), /COMPUTER_ACTION_FAILED: out_of_bounds/);
		await assert.rejects(act.handle(JSON.stringify({ executionId, action: "list_apps" })), /COMPUTER_UNSUPPORTED_ACTION/);
		assert.equal(JSON.parse(await act.handle(JSON.stringify({ executionId, action: "__close_execution" }))).ok, true);
	});
});
