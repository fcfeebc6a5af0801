// Test harness: a private Xvfb, the real build/bureaud on a free port, the
// xevlog X client (build/tests/xevlog) to see input independently of
// bureaud. Everything started here is killed when the process exits.

import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const ROOT = path.resolve(HERE, "..", "..", "..");
export const BUILD = path.resolve(process.env.BUREAU_BUILD ?? path.join(ROOT, "build"));

const procs = [];

export function killAll() {
	for (const p of procs.reverse()) {
		try {
			process.kill(-p.pid, "SIGTERM");
		} catch {
			// already gone
		}
	}
	procs.length = 0;
}
process.on("exit", killAll);
for (const sig of ["SIGINT", "SIGTERM"])
	process.on(sig, () => process.exit(1));

export function start(argv, opts = {}) {
	const p = spawn(argv[0], argv.slice(1), { detached: true, stdio: opts.stdio ?? "ignore", env: opts.env ?? process.env });
	procs.push(p);
	// The test process ends when its tests do: children do not hold it.
	p.unref();
	return p;
}

export function stop(p) {
	try {
		process.kill(-p.pid, "SIGTERM");
	} catch {
		// already gone
	}
}

export function sleep(ms) {
	return new Promise((r) => setTimeout(r, ms));
}

export async function waitFor(pred, what, timeoutMs = 10000) {
	const deadline = Date.now() + timeoutMs;
	for (;;) {
		const v = await pred();
		if (v)
			return v;
		if (Date.now() > deadline)
			throw new Error(`timed out waiting for ${what}`);
		await sleep(50);
	}
}

function portFree(port) {
	return new Promise((resolve) => {
		const s = net.createServer();
		s.once("error", () => resolve(false));
		s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
	});
}

/** A free port P on 127.0.0.1 (P+1 free too when pair), random in
 * 20000-60000 like tests/lib/bt.py. */
export async function freePort(pair = true) {
	for (let i = 0; i < 200; i++) {
		const p = 20000 + Math.floor(Math.random() * 40000);
		if (await portFree(p) && (!pair || await portFree(p + 1)))
			return p;
	}
	throw new Error("no free port");
}

export async function startXvfb(size = "1280x800") {
	for (let attempt = 0; attempt < 5; attempt++) {
		let n = 100 + Math.floor(Math.random() * 300);
		while (fs.existsSync(`/tmp/.X${n}-lock`) || fs.existsSync(`/tmp/.X11-unix/X${n}`))
			n++;
		const name = `:${n}`;
		const p = start(["Xvfb", name, "-screen", "0", `${size}x24`, "-nolisten", "tcp", "-noreset"]);
		try {
			await waitFor(() => p.exitCode !== null || fs.existsSync(`/tmp/.X11-unix/X${n}`), "Xvfb");
		} catch {
			stop(p);
			continue;
		}
		if (p.exitCode === null &&
		    spawnSync("xdpyinfo", ["-display", name], { stdio: "ignore" }).status === 0)
			return { name, proc: p, env: { ...process.env, DISPLAY: name, LC_ALL: "C.UTF-8" } };
		stop(p);
	}
	throw new Error("cannot start Xvfb");
}

/** build/bureaud on display, with a fresh token; resolves once it answers. */
export async function startDaemon(display, args = []) {
	const port = await freePort();
	const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bureau-oc-test-"));
	const token = `t0ken-${Math.random().toString(16).slice(2, 10)}`;
	const tokenFile = path.join(dir, "token");
	fs.writeFileSync(tokenFile, `${token}\n`, { mode: 0o600 });
	const url = `tcp://127.0.0.1:${port}`;
	const log = fs.openSync(path.join(dir, "bureaud.log"), "w");
	const proc = start([path.join(BUILD, "bureaud"), "--display", display.name, "--listen", url,
		"--token-file", tokenFile, ...args], { env: display.env, stdio: ["ignore", log, log] });
	const bureau = path.join(BUILD, "bureau");
	await waitFor(() => {
		if (proc.exitCode !== null)
			throw new Error(`bureaud exited: ${fs.readFileSync(path.join(dir, "bureaud.log"), "utf8")}`);
		return spawnSync(bureau, ["call", "--url", url, "--token-file", tokenFile, "--timeout", "1",
			'{"tool":"system","action":"ping"}'], { stdio: "ignore" }).status === 0;
	}, "bureaud to answer", 15000);
	return { url, token, tokenFile, dir, proc, port };
}

/** xevlog in a window at a known place; its lines, parsed. */
export class EvLog {
	constructor(display, geometry = "400x300+100+100") {
		const m = geometry.match(/(\d+)x(\d+)\+(\d+)\+(\d+)/);
		[this.w, this.h, this.x, this.y] = m.slice(1).map(Number);
		this.proc = start([path.join(BUILD, "tests", "xevlog"), "-geometry", geometry, "-title", "evlog"],
		    { env: display.env, stdio: ["ignore", "pipe", "ignore"] });
		this.lines = [];
		let buf = "";
		this.proc.stdout.setEncoding("utf8");
		this.proc.stdout.on("data", (d) => {
			buf += d;
			let i;
			while ((i = buf.indexOf("\n")) >= 0) {
				this.lines.push(buf.slice(0, i));
				buf = buf.slice(i + 1);
			}
		});
		this.display = display;
	}

	async ready() {
		await this.wait((l) => l.startsWith("ready"), "xevlog ready");
		this.lines = [];
	}

	async wait(pred, what, timeoutMs = 5000) {
		return waitFor(() => this.lines.find(pred), `${what}; saw ${JSON.stringify(this.lines.slice(-10))}`, timeoutMs);
	}

	events(kind) {
		return this.lines.filter((l) => l.startsWith(kind + " ")).map((l) => {
			const d = { kind };
			for (const m of l.matchAll(/(\w+)=(\S*)/g))
				d[m[1]] = m[2];
			return d;
		});
	}

	stop() {
		stop(this.proc);
	}
}

/** The PNG's width and height, read by ImageMagick (not by bureaud). */
export function identifyPng(base64) {
	const r = spawnSync("identify", ["-format", "%m %w %h", "png:-"], { input: Buffer.from(base64, "base64") });
	if (r.status !== 0)
		throw new Error(`identify failed: ${r.stderr}`);
	return r.stdout.toString();
}

/** Whether bureaud offers a tool (system info's capabilities). */
export function hasTool(daemon, tool) {
	const r = spawnSync(path.join(BUILD, "bureau"), ["call", "--url", daemon.url, "--token-file", daemon.tokenFile,
		'{"tool":"system","action":"info"}']);
	const info = JSON.parse(r.stdout.toString());
	return Object.hasOwn(info.capabilities ?? {}, tool);
}

/** A fake OpenClaw plugin api: records what the plugin registers. */
export function fakeApi(pluginConfig, extra = {}) {
	const api = {
		id: "bureau",
		name: "Bureau",
		source: path.join(ROOT, "host-bridge", "openclaw", "index.js"),
		rootDir: path.join(ROOT, "host-bridge", "openclaw"),
		registrationMode: "full",
		config: {},
		pluginConfig,
		logger: { info() {}, warn() {}, error() {}, debug() {} },
		tools: new Map(),
		toolOpts: new Map(),
		nodeHostCommands: new Map(),
		registerTool(tool, opts) {
			if (typeof tool === "function")
				throw new Error("the plugin registered a factory; the tests expect tools");
			if (this.tools.has(tool.name))
				throw new Error(`tool '${tool.name}' registered twice`);
			this.tools.set(tool.name, tool);
			this.toolOpts.set(tool.name, opts);
		},
		registerNodeHostCommand(cmd) {
			this.nodeHostCommands.set(cmd.command, cmd);
		},
		...extra,
	};
	return api;
}
