// The `bureau` host command line: desktop management (ls, create, start,
// stop) and resolving a desktop NAME to its daemon's endpoint and token.

import { execFile } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { BureauError, pluginRoot } from "./client.js";

/** The bureau binary: explicit, $BUREAU_CLI, the tree's build/bureau, else
 * `bureau` on $PATH. */
export function findCli(explicit, rootDir) {
	if (explicit)
		return explicit;
	if (process.env.BUREAU_CLI)
		return process.env.BUREAU_CLI;
	const built = path.resolve(pluginRoot(rootDir), "..", "..", "build", "bureau");
	if (fs.existsSync(built))
		return built;
	return "bureau";
}

/** $BUREAU_HOME or ~/.local/share/bureau, as the CLI resolves it. */
export function bureauHome(explicit) {
	if (explicit)
		return explicit;
	if (process.env.BUREAU_HOME)
		return process.env.BUREAU_HOME;
	return path.join(os.homedir(), ".local", "share", "bureau");
}

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export function checkName(name) {
	if (typeof name !== "string" || !NAME_RE.test(name))
		throw new BureauError("invalid_argument",
		    `invalid desktop name '${name}': expected letters, digits, '.', '_' or '-'`);
	return name;
}

/**
 * A desktop NAME -> {url, token}: the two files the desktop manager
 * writes and `bureau call NAME` reads ($BUREAU_HOME/NAME/endpoint and
 * token, host-bridge/cli/cli.h).
 */
export function resolveDesktop(name, home) {
	checkName(name);
	const dir = path.join(bureauHome(home), name);
	let url;
	try {
		url = fs.readFileSync(path.join(dir, "endpoint"), "utf8").trim();
	} catch (e) {
		throw new BureauError("not_found",
		    `no desktop '${name}': cannot read '${path.join(dir, "endpoint")}' (${e.code ?? e.message}); is it created and started?`);
	}
	if (url === "")
		throw new BureauError("not_found", `desktop '${name}' has an empty endpoint file: is it started?`);
	let token = null;
	try {
		token = fs.readFileSync(path.join(dir, "token"), "utf8").replace(/\r?\n$/, "");
	} catch (e) {
		if (e.code !== "ENOENT")
			throw new BureauError("permission_denied",
			    `cannot read the token of desktop '${name}': ${e.message}`);
	}
	return { url, token: token === "" ? null : token };
}

/** Run `bureau ARGS...`; resolve {code, stdout, stderr}. */
export function runCli(cli, args, { timeoutMs = 600000, env } = {}) {
	return new Promise((resolve, reject) => {
		execFile(cli, args, { timeout: timeoutMs, maxBuffer: 16 << 20, env: env ?? process.env },
		    (err, stdout, stderr) => {
			if (err && typeof err.code !== "number") {
				if (err.code === "ENOENT")
					return reject(new BureauError("not_found",
					    `the bureau command line '${cli}' is not there: run make, or set the plugin's 'bureauCli'`));
				if (err.killed)
					return reject(new BureauError("timeout",
					    `'bureau ${args.join(" ")}' did not finish within ${timeoutMs / 1000} s`));
				return reject(new BureauError("io_error", `cannot run '${cli}': ${err.message}`));
			}
			resolve({ code: err ? err.code : 0, stdout, stderr });
		});
	});
}

/**
 * One desktop-management command through the CLI. A CLI built without the
 * desktop manager answers "unknown command": say so plainly.
 */
export async function desktopCommand(cli, command, args, opts) {
	const r = await runCli(cli, [command, ...args], opts);
	if (r.code === 0)
		return r;
	if (r.code === 2 && /unknown command/.test(r.stderr))
		throw new BureauError("unknown_action",
		    `the bureau command line '${cli}' has no '${command}' command: it was built without desktop management (bureau ls/create/start/stop)`);
	const msg = (r.stderr.trim() || r.stdout.trim() || `exit status ${r.code}`).replace(/^bureau: /, "");
	throw new BureauError(r.code === 2 ? "invalid_argument" : "io_error",
	    `bureau ${command} failed: ${msg}`);
}
