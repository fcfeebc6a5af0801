// The bureaud client: libbureau.so (the project's C client library) through
// the koffi FFI. libbureau owns the wire protocol (nng REQ, token, ids,
// redial, timeouts); this file only moves JSON text in and out of
// bureau_call_timeout, on koffi's worker threads so a long shell command
// never blocks the Gateway's event loop.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import koffi from "koffi";

const HERE = path.dirname(fileURLToPath(import.meta.url));

// Error names of the transport and local codes of bureau.h; the daemon's
// own codes come back in the reply's error.code.
const LOCAL_CODES = {
	"-20": "connect_failed",
	"-21": "no_reply",
	"-22": "malformed_reply",
	"-30": "bad_argument",
	"-31": "out_of_memory",
};

/** A failed call: code is the daemon's error code (invalid_argument,
 * not_found, ...) or a transport code (connect_failed, no_reply,
 * malformed_reply). message is the daemon's message verbatim. */
export class BureauError extends Error {
	constructor(code, message, reply) {
		super(`${code}: ${message}`);
		this.name = "BureauError";
		this.code = code;
		this.detail = message;
		if (reply !== undefined)
			this.reply = reply;
	}
}

/** The plugin's root directory: given by OpenClaw (api.rootDir), else
 * this file's parent. OpenClaw may run a cached copy of the module, so
 * import.meta.url alone does not say where the package is. */
export function pluginRoot(rootDir) {
	return rootDir ?? path.resolve(HERE, "..");
}

/** Where libbureau.so is: an explicit path, $BUREAU_LIB, the tree's
 * build/ (this package lives in host-bridge/openclaw), else the system's. */
export function findLibrary(explicit, rootDir) {
	if (explicit)
		return explicit;
	if (process.env.BUREAU_LIB)
		return process.env.BUREAU_LIB;
	const built = path.resolve(pluginRoot(rootDir), "..", "..", "build", "libbureau.so");
	if (fs.existsSync(built))
		return built;
	return "libbureau.so.0";
}

let lib = null;
let libPath = null;

function load(explicit, rootDir) {
	const want = findLibrary(explicit, rootDir);
	if (lib !== null) {
		if (want !== libPath)
			throw new BureauError("bad_argument",
			    `libbureau already loaded from '${libPath}', cannot load '${want}'`);
		return lib;
	}
	let l;
	try {
		l = koffi.load(want);
	} catch (e) {
		throw new BureauError("bad_argument",
		    `cannot load libbureau '${want}': ${e.message} (run make, or set BUREAU_LIB or the plugin's library option)`);
	}
	pin(want);
	koffi.opaque("bureau_client");
	lib = {
		connect: l.func("int bureau_connect(const char *url, const char *token, double timeout, _Out_ bureau_client **out)"),
		close: l.func("void bureau_close(bureau_client *c)"),
		call: l.func("int bureau_call_timeout(bureau_client *c, const char *request, double timeout, _Out_ void **reply)"),
		free: l.func("void bureau_free(void *p)"),
		errorName: l.func("const char *bureau_error_name(int code)"),
		clientError: l.func("const char *bureau_client_error(const bureau_client *c)"),
	};
	libPath = want;
	return lib;
}

// koffi unloads the library when the process ends while threads that run
// its code (koffi's workers, the threads of the nng inside it) may still
// be exiting, which crashed Node on exit. RTLD_NODELETE keeps libbureau and
// its dependencies mapped for good.
const RTLD_NOW = 2;
const RTLD_NODELETE = 0x1000;

function pin(file) {
	let libc;
	try {
		libc = koffi.load("libc.so.6");
	} catch {
		return; // not glibc: nothing we know how to pin
	}
	const dlopen = libc.func("void *dlopen(const char *file, int mode)");
	if (dlopen(file, RTLD_NOW | RTLD_NODELETE) === null)
		throw new BureauError("bad_argument", `cannot pin libbureau '${file}' in memory`);
}

/** One daemon: url, token (or null), timeout in seconds per call. */
export class Client {
	constructor({ url, token = null, timeout = 30, library, rootDir } = {}) {
		if (typeof url !== "string" || url === "")
			throw new BureauError("bad_argument", "no daemon url: set the plugin's 'url' (or 'desktop')");
		this.url = url;
		this.timeout = timeout;
		this.lib = load(library, rootDir);
		const out = [null];
		const rc = this.lib.connect(url, token, timeout, out);
		if (rc !== 0)
			throw new BureauError(this.lib.errorName(rc), `cannot connect to '${url}': ${this.lib.clientError(null)}`);
		this.handle = out[0];
		this.busy = 0;
	}

	/** Send one request object; resolve with the reply object when ok,
	 * reject with a BureauError otherwise. timeout (s) overrides the
	 * client's for this call. */
	call(request, timeout = 0) {
		if (this.handle === null)
			return Promise.reject(new BureauError("bad_argument", "client is closed"));
		const text = JSON.stringify(request);
		this.busy++;
		return new Promise((resolve, reject) => {
			const out = [null];
			this.lib.call.async(this.handle, text, timeout, out, (err, rc) => {
				this.busy--;
				if (err)
					return reject(err);
				let replyText = null;
				if (out[0] !== null) {
					replyText = koffi.decode(out[0], "char", -1);
					this.lib.free(out[0]);
				}
				if (replyText === null) {
					const code = LOCAL_CODES[String(rc)] ?? this.lib.errorName(rc);
					// bureau_client_error is per thread: the worker's
					// message is gone by now, so say what we know.
					return reject(new BureauError(code, describeTransport(code, this.url, timeout || this.timeout)));
				}
				let reply;
				try {
					reply = JSON.parse(replyText);
				} catch (e) {
					return reject(new BureauError("malformed_reply", `reply is not JSON: ${e.message}`));
				}
				if (reply.ok === true)
					return resolve(reply);
				const e = reply.error ?? {};
				reject(new BureauError(e.code ?? this.lib.errorName(rc), e.message ?? "no message", reply));
			});
		});
	}

	close() {
		if (this.handle !== null) {
			this.lib.close(this.handle);
			this.handle = null;
		}
	}
}

function describeTransport(code, url, timeout) {
	switch (code) {
	case "connect_failed":
		return `no connection to '${url}' within ${timeout} s`;
	case "no_reply":
		return `no reply from '${url}' within ${timeout} s`;
	case "malformed_reply":
		return `the reply from '${url}' is not a protocol reply`;
	default:
		return `call to '${url}' failed`;
	}
}
