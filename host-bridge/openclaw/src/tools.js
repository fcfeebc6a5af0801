// The plugin's agent tools: bureau_computer, bureau_bash, bureau_edit,
// bureau_files, bureau_accessibility (each one request to bureaud) and
// bureau_desktop (the `bureau` command line). Each is an OpenClaw AgentTool: JSON Schema
// parameters, execute(toolCallId, params, signal) -> {content, details};
// failures are thrown as BureauError (code + the daemon's message).

import fs from "node:fs";
import { BureauError, Client } from "./client.js";
import { bureauHome, checkName, desktopCommand, findCli, resolveDesktop } from "./cli.js";

export const TOOL_NAMES = ["bureau_computer", "bureau_bash", "bureau_edit", "bureau_files", "bureau_accessibility",
	"bureau_desktop"];

// --- connection -------------------------------------------------------------

/**
 * The daemon a configuration names: url + token (or tokenFile), or a
 * desktop NAME resolved through the bureau desktop manager's files. One
 * Client per (url, token), made on first use and kept.
 */
export class Connection {
	constructor(config = {}, rootDir) {
		this.config = config ?? {};
		this.rootDir = rootDir;
		this.clients = new Map();
	}

	target() {
		const c = this.config;
		if (c.desktop) {
			if (c.url)
				throw new BureauError("invalid_argument", "set either 'url' or 'desktop' in the bureau plugin's config, not both");
			return { ...resolveDesktop(c.desktop, c.bureauHome), desktop: c.desktop };
		}
		if (!c.url)
			throw new BureauError("invalid_argument",
			    "the bureau plugin has no daemon: set 'url' (and 'token') or 'desktop' in plugins.entries.bureau.config");
		let token = c.token ?? null;
		if (token === null && c.tokenFile) {
			try {
				token = fs.readFileSync(c.tokenFile, "utf8").replace(/\r?\n$/, "");
			} catch (e) {
				throw new BureauError("permission_denied", `cannot read tokenFile '${c.tokenFile}': ${e.message}`);
			}
		}
		if (token === null && process.env.BUREAU_TOKEN)
			token = process.env.BUREAU_TOKEN;
		return { url: c.url, token };
	}

	client() {
		const t = this.target();
		const key = `${t.url}\n${t.token ?? ""}`;
		let cl = this.clients.get(key);
		if (!cl) {
			cl = new Client({ url: t.url, token: t.token, timeout: this.config.timeout ?? 30, library: this.config.library, rootDir: this.rootDir });
			this.clients.set(key, cl);
		}
		return cl;
	}

	/** One request; extra seconds are added to the call's timeout for
	 * requests that take long on purpose (wait, hold_key, bash). */
	call(request, extraSeconds = 0) {
		const cl = this.client();
		return cl.call(request, extraSeconds > 0 ? cl.timeout + extraSeconds : 0);
	}

	close() {
		for (const cl of this.clients.values())
			cl.close();
		this.clients.clear();
	}
}

// --- results ----------------------------------------------------------------

function text(t) {
	return { type: "text", text: t };
}

/** The reply's fields for details, without the ones OpenClaw grades on
 * (ok, status, error, ...) and without the image data. */
function replyDetails(reply) {
	const d = {};
	for (const [k, v] of Object.entries(reply)) {
		if (k === "ok" || k === "id" || k === "image" || k === "data" || k === "status" || k === "error")
			continue;
		d[k] = v;
	}
	if (reply.image) {
		const { data, ...img } = reply.image;
		d.image = { ...img, bytes: Math.floor((data?.length ?? 0) * 3 / 4) };
	}
	return d;
}

/** An image reply -> [text line with size and frame, image block]. */
function imageContent(reply, lead) {
	const img = reply.image;
	const line = `${img.width}x${img.height} ${img.mime_type}, frame ${img.frame}` +
	    (reply.settle_timed_out ? " (the screen had not settled)" : "");
	return [text(lead ? `${lead}\n${line}` : line),
	    { type: "image", data: img.data, mimeType: img.mime_type }];
}

function throwIfAborted(signal) {
	if (signal?.aborted)
		throw new BureauError("timeout", "the tool call was cancelled");
}

// --- schemas (plain JSON Schema) ----------------------------------------------

const COORD = { type: "array", items: { type: "integer", minimum: 0 }, minItems: 2, maxItems: 2 };

const COMPUTER_ACTIONS = ["screenshot", "zoom", "cursor_position", "mouse_move", "left_click", "right_click",
	"middle_click", "double_click", "triple_click", "left_click_drag", "left_mouse_down", "left_mouse_up",
	"scroll", "type", "key", "hold_key", "wait"];

const COMPUTER_PARAMS = {
	type: "object",
	additionalProperties: false,
	required: ["action"],
	properties: {
		action: { type: "string", enum: COMPUTER_ACTIONS, description: "The Anthropic computer-use action." },
		coordinate: { ...COORD, description: "[x, y] in screenshot pixels: the target of a click, move, scroll or the end of a drag." },
		start_coordinate: { ...COORD, description: "[x, y] where left_click_drag starts." },
		text: { type: "string", description: "type: the text; key/hold_key: an xdotool-style combo such as ctrl+shift+t or Return; clicks and scroll: modifiers held, e.g. shift." },
		scroll_direction: { type: "string", enum: ["up", "down", "left", "right"] },
		scroll_amount: { type: "integer", minimum: 0, maximum: 100, description: "Wheel clicks (default 3)." },
		duration: { type: "number", minimum: 0, maximum: 100, description: "Seconds, for wait and hold_key." },
		region: { type: "array", items: { type: "integer", minimum: 0 }, minItems: 4, maxItems: 4, description: "zoom: [x1, y1, x2, y2] in screenshot pixels." },
		screenshot: { type: "boolean", description: "false: no screenshot after an input action (default true)." },
		frame: { type: "integer", minimum: 0, description: "Refuse the action unless this is still the latest screenshot's frame." },
	},
};

const BASH_PARAMS = {
	type: "object",
	additionalProperties: false,
	properties: {
		command: { type: "string", description: "The shell command; the shell persists (cwd, environment) between calls." },
		restart: { type: "boolean", description: "true: kill the shell and start a fresh one." },
		session: { type: "string", description: "A named shell session (default \"default\")." },
		timeout: { type: "number", minimum: 1, maximum: 86400, description: "Seconds before the command's process group is killed (default 120)." },
	},
};

const EDIT_PARAMS = {
	type: "object",
	additionalProperties: false,
	required: ["command", "path"],
	properties: {
		command: { type: "string", enum: ["view", "create", "str_replace", "insert", "undo_edit"] },
		path: { type: "string", description: "Absolute path on the desktop." },
		file_text: { type: "string", description: "create: the file's content." },
		old_str: { type: "string", description: "str_replace: the text to replace, which must occur exactly once." },
		new_str: { type: "string", description: "str_replace: the replacement; insert: the text to insert." },
		insert_line: { type: "integer", minimum: 0, description: "insert: after this line (0 = at the top)." },
		view_range: { type: "array", items: { type: "integer" }, minItems: 2, maxItems: 2, description: "view: [start, end] lines, end -1 for the end." },
	},
};

const FILES_PARAMS = {
	type: "object",
	additionalProperties: false,
	required: ["action", "path"],
	properties: {
		action: { type: "string", enum: ["read", "write", "list", "stat", "remove", "mkdir", "move"] },
		path: { type: "string", description: "Absolute path on the desktop." },
		text: { type: "string", description: "write: UTF-8 content." },
		data: { type: "string", description: "write: base64 content (instead of text)." },
		offset: { type: "integer", minimum: 0, description: "read: first byte." },
		length: { type: "integer", minimum: 0, description: "read: bytes at most." },
		mode: { type: "string", description: "write/mkdir: permission bits, e.g. \"0644\"." },
		parents: { type: "boolean", description: "write/mkdir: make missing parent directories." },
		recursive: { type: "boolean", description: "remove: a non-empty directory too." },
		to: { type: "string", description: "move: the new path." },
		overwrite: { type: "boolean", description: "move: replace an existing target (default true)." },
	},
};

const A11Y_PARAMS = {
	type: "object",
	additionalProperties: false,
	required: ["action"],
	properties: {
		action: { type: "string", enum: ["tree", "find", "do", "set_text"] },
		window: { type: "integer", description: "tree: one window's elements (an id from the window list)." },
		depth: { type: "integer", minimum: 0, description: "tree: levels to read." },
		max_nodes: { type: "integer", minimum: 1, description: "tree: at most this many nodes." },
		role: { type: "string", description: "find: AT-SPI role name, e.g. \"push button\", \"entry\"." },
		name: { type: "string", description: "find: the exact name; do: the action to run (default the first)." },
		name_contains: { type: "string", description: "find: part of the name, any case." },
		state: { type: "string", description: "find: a state the element has, e.g. focused, editable." },
		id: { type: "integer", minimum: 1, description: "do, set_text: the element's id from tree or find." },
		text: { type: "string", description: "set_text: the new contents." },
	},
};

const DESKTOP_PARAMS = {
	type: "object",
	additionalProperties: false,
	required: ["action"],
	properties: {
		action: { type: "string", enum: ["list", "create", "start", "stop", "status"] },
		name: { type: "string", description: "The desktop's name (all but list)." },
		disk: { type: "string", description: "create: data disk size, e.g. 20G." },
		memory: { type: "string", description: "create: memory, e.g. 4G." },
		cpus: { type: "integer", minimum: 1, maximum: 64, description: "create: virtual CPUs." },
	},
};

// --- tools --------------------------------------------------------------------

function pick(params, keys) {
	const out = {};
	for (const k of keys)
		if (params[k] !== undefined)
			out[k] = params[k];
	return out;
}

export function computerTool(conn) {
	return {
		name: "bureau_computer",
		label: "Bureau computer",
		description: "See and drive a bureau Linux desktop with the Anthropic computer-use actions: " +
		    "screenshot, zoom, cursor_position, mouse_move, left/right/middle/double/triple_click, left_click_drag, " +
		    "left_mouse_down/up, scroll, type, key, hold_key, wait. Coordinates are screenshot pixels. " +
		    "Input actions return a fresh screenshot once the screen has settled.",
		parameters: COMPUTER_PARAMS,
		async execute(_id, params = {}, signal) {
			throwIfAborted(signal);
			const req = { tool: "computer", ...pick(params, Object.keys(COMPUTER_PARAMS.properties)) };
			const extra = (params.action === "wait" || params.action === "hold_key") ? (params.duration ?? 1) + 5 : 0;
			const reply = await conn.call(req, extra);
			const details = replyDetails(reply);
			const lead = reply.output ? String(reply.output) : "";
			if (reply.image)
				return { content: imageContent(reply, lead), details };
			return { content: [text(lead || `${params.action}: done`)], details };
		},
	};
}

export function bashTool(conn) {
	return {
		name: "bureau_bash",
		label: "Bureau bash",
		description: "Run a shell command on the bureau desktop (the Anthropic bash tool): a persistent shell whose " +
		    "working directory and environment carry over between calls; restart: true starts a fresh shell.",
		parameters: BASH_PARAMS,
		async execute(_id, params = {}, signal) {
			throwIfAborted(signal);
			if (!params.restart && typeof params.command !== "string")
				throw new BureauError("invalid_argument", "missing 'command' (or restart: true)");
			const req = { tool: "bash", ...pick(params, ["command", "restart", "session", "timeout"]) };
			const reply = await conn.call(req, (params.timeout ?? 120) + 10);
			let out = reply.output ?? "";
			if (typeof reply.exit_code === "number" && reply.exit_code !== 0)
				out += `${out && !out.endsWith("\n") ? "\n" : ""}[exit code ${reply.exit_code}]`;
			if (params.restart && !out)
				out = "shell restarted";
			return { content: [text(out === "" ? "(no output)" : out)], details: replyDetails(reply) };
		},
	};
}

export function editTool(conn) {
	return {
		name: "bureau_edit",
		label: "Bureau editor",
		description: "View and edit files on the bureau desktop (the Anthropic str_replace_based_edit_tool): " +
		    "view (file or directory), create, str_replace, insert, undo_edit.",
		parameters: EDIT_PARAMS,
		async execute(_id, params = {}, signal) {
			throwIfAborted(signal);
			const req = { tool: "str_replace_based_edit_tool", ...pick(params, Object.keys(EDIT_PARAMS.properties)) };
			const reply = await conn.call(req);
			return { content: [text(reply.output ?? "done")], details: replyDetails(reply) };
		},
	};
}

const utf8 = new TextDecoder("utf-8", { fatal: true });

function sniffImage(buf) {
	if (buf.length > 8 && buf[0] === 0x89 && buf.toString("latin1", 1, 4) === "PNG")
		return "image/png";
	if (buf.length > 3 && buf[0] === 0xff && buf[1] === 0xd8 && buf[2] === 0xff)
		return "image/jpeg";
	return null;
}

export function filesTool(conn) {
	return {
		name: "bureau_files",
		label: "Bureau files",
		description: "Files on the bureau desktop: read (text, an image, or base64), write (text or base64, atomic), " +
		    "list, stat, remove, mkdir, move.",
		parameters: FILES_PARAMS,
		async execute(_id, params = {}, signal) {
			throwIfAborted(signal);
			const req = { tool: "file", ...pick(params, Object.keys(FILES_PARAMS.properties)) };
			const reply = await conn.call(req);
			const details = replyDetails(reply);
			switch (params.action) {
			case "read": {
				const buf = Buffer.from(reply.data ?? "", "base64");
				const head = `${params.path}: ${reply.length ?? buf.length} of ${reply.size} bytes` +
				    (reply.eof === false ? " (more follows: read on with offset)" : "");
				const mime = sniffImage(buf);
				if (mime && reply.eof !== false)
					return { content: [text(head), { type: "image", data: reply.data, mimeType: mime }], details };
				try {
					return { content: [text(`${head}\n${utf8.decode(buf)}`)], details };
				} catch {
					return { content: [text(`${head}, binary, base64:\n${reply.data}`)], details };
				}
			}
			case "list": {
				const lines = (reply.entries ?? []).map((e) =>
				    `${e.type}\t${e.size ?? ""}\t${e.name}${e.target ? ` -> ${e.target}` : ""}`);
				return { content: [text(lines.length ? lines.join("\n") : "(empty)")], details };
			}
			case "stat":
				return { content: [text(JSON.stringify(details))], details };
			default:
				return { content: [text(reply.output || `${params.action} ${params.path}: done`)], details };
			}
		},
	};
}

export function accessibilityTool(conn) {
	return {
		name: "bureau_accessibility",
		label: "Bureau accessibility",
		description: "The bureau desktop's controls as a screen reader sees them (AT-SPI): tree, find by role, name or " +
		    "state, do an element's action, set_text of an editable one. bounds are screenshot pixels: a click at " +
		    "their centre lands on the control.",
		parameters: A11Y_PARAMS,
		async execute(_id, params = {}, signal) {
			throwIfAborted(signal);
			const req = { tool: "accessibility", ...pick(params, Object.keys(A11Y_PARAMS.properties)) };
			const reply = await conn.call(req);
			const details = replyDetails(reply);
			if (reply.nodes)
				return { content: [text(JSON.stringify(reply.nodes))], details };
			return { content: [text(params.action === "do" ? `done: ${reply.done}` : "text set")], details };
		},
	};
}

export function desktopTool(config, rootDir) {
	return {
		name: "bureau_desktop",
		label: "Bureau desktops",
		description: "Manage bureau desktops (QEMU VMs with bureaud) through the bureau command line: " +
		    "list, create, start, stop, status.",
		parameters: DESKTOP_PARAMS,
		async execute(_id, params = {}, signal) {
			throwIfAborted(signal);
			const cli = findCli(config.bureauCli, rootDir);
			const env = { ...process.env, BUREAU_HOME: bureauHome(config.bureauHome) };
			let args;
			let command = params.action;
			switch (params.action) {
			case "list":
				command = "ls";
				args = [];
				break;
			case "create":
				args = [checkName(params.name)];
				if (params.disk)
					args.push("--disk", String(params.disk));
				if (params.memory)
					args.push("--memory", String(params.memory));
				if (params.cpus)
					args.push("--cpus", String(params.cpus));
				break;
			case "start":
			case "stop":
			case "status":
				args = [checkName(params.name)];
				break;
			default:
				throw new BureauError("unknown_action", `unknown action '${params.action}': expected list, create, start, stop or status`);
			}
			const r = await desktopCommand(cli, command, args, { env });
			const out = r.stdout.trim() || `${params.action}${params.name ? " " + params.name : ""}: done`;
			return { content: [text(out)], details: { action: params.action, name: params.name, stdout: r.stdout, stderr: r.stderr } };
		},
	};
}

/** Every tool of the plugin over one connection. rootDir: the plugin's
 * directory (api.rootDir), to find the tree's build/. */
export function createTools(config = {}, rootDir) {
	config = config ?? {};
	const conn = new Connection(config, rootDir);
	return {
		conn,
		tools: [computerTool(conn), bashTool(conn), editTool(conn), filesTool(conn), accessibilityTool(conn),
			desktopTool(config, rootDir)],
	};
}
