// bureau as OpenClaw's Computer Use provider (openclaw/plugin-sdk/
// computer-use): the node-host command pair screen.snapshot and
// computer.act, fulfilled by bureaud. OpenClaw's own `computer` tool then
// drives the bureau desktop through a node host running this plugin.

import { randomUUID } from "node:crypto";
import { BureauError } from "./client.js";

// The contract's desktop actions that bureaud does itself. zoom is left
// out: the contract's zoom is a window-observation crop (windowRef,
// observationId), which bureau has no notion of.
export const PROVIDER_ACTIONS = ["screenshot", "left_click", "right_click", "middle_click", "double_click",
	"triple_click", "mouse_move", "left_click_drag", "left_mouse_down", "left_mouse_up", "scroll", "type",
	"key", "hold_key", "wait", "get_cursor_position"];

const CLICKS = new Set(["left_click", "right_click", "middle_click", "double_click", "triple_click", "mouse_move"]);

function fail(code, message) {
	return new Error(`COMPUTER_${code}: ${message}`);
}

function coord(p) {
	if (p.x === undefined && p.y === undefined)
		return undefined;
	if (!Number.isFinite(p.x) || !Number.isFinite(p.y))
		throw fail("INVALID_REQUEST", "x and y go together");
	return [Math.round(p.x), Math.round(p.y)];
}

/** A computer.act payload -> one bureaud computer request. */
export function actRequest(p) {
	if (p.windowRef || p.elementRef || p.observationId)
		throw fail("UNSUPPORTED_TARGET", "bureau drives the whole screen: window and element targets are not supported");
	const r = { tool: "computer", action: p.action };
	if (CLICKS.has(p.action) || p.action === "left_mouse_down" || p.action === "left_mouse_up") {
		const c = coord(p);
		if (c)
			r.coordinate = c;
		if (p.modifiers && p.action !== "mouse_move")
			r.text = p.modifiers;
		if (p.action === "mouse_move" && !c)
			throw fail("INVALID_REQUEST", "mouse_move needs x and y");
		return r;
	}
	switch (p.action) {
	case "left_click_drag": {
		const c = coord(p);
		if (!c || !Number.isFinite(p.fromX) || !Number.isFinite(p.fromY))
			throw fail("INVALID_REQUEST", "left_click_drag needs fromX, fromY, x and y");
		r.start_coordinate = [Math.round(p.fromX), Math.round(p.fromY)];
		r.coordinate = c;
		return r;
	}
	case "scroll": {
		const c = coord(p);
		if (c)
			r.coordinate = c;
		r.scroll_direction = p.scrollDirection ?? "down";
		if (p.scrollAmount !== undefined)
			r.scroll_amount = p.scrollAmount;
		if (p.modifiers)
			r.text = p.modifiers;
		return r;
	}
	case "type":
		r.text = p.text ?? "";
		return r;
	case "key":
		r.text = p.keys ?? "";
		return r;
	case "hold_key":
		r.text = p.keys ?? "";
		r.duration = (p.durationMs ?? 1000) / 1000;
		return r;
	case "get_cursor_position":
		r.action = "cursor_position";
		return r;
	default:
		throw fail("UNSUPPORTED_ACTION", `bureau does not offer '${p.action}'`);
	}
}

function daemonError(e) {
	if (e instanceof BureauError)
		return fail("ACTION_FAILED", e.message);
	return e;
}

/**
 * The provider over a Connection (tools.js). sdk is the module
 * openclaw/plugin-sdk/computer-use (its payload parsers).
 */
export function createComputerUseProvider(conn, sdk) {
	// One generation per process: frames of an earlier process never match.
	const generation = randomUUID();
	const frameId = (frame) => `bureau:${generation}:${frame}`;
	const observation = (reply) => ({
		kind: "screen",
		base64: reply.image.data,
		format: reply.image.mime_type === "image/jpeg" ? "jpeg" : "png",
		width: reply.image.width,
		height: reply.image.height,
	});
	return {
		id: "bureau",
		label: "bureau desktop",
		capabilities() {
			return {
				contractVersion: 2,
				provider: { id: "bureau", label: "bureau desktop", generation },
				actions: PROVIDER_ACTIONS,
				targets: ["screen"],
				deliveryModes: ["foreground"],
				observations: ["image"],
				features: { recording: false, agentCursor: false, multiDisplay: false },
			};
		},
		isAvailable() {
			try {
				conn.target();
				return true;
			} catch {
				return false;
			}
		},
		async openExecution() {
			return {
				async snapshot(paramsJSON) {
					const p = sdk.parseScreenSnapshotParamsJSON(paramsJSON);
					if (p.screenIndex !== undefined && p.screenIndex !== 0)
						throw fail("INVALID_REQUEST", `no screen ${p.screenIndex}: bureau has one screen`);
					const req = { tool: "computer", action: "screenshot" };
					if (p.format === "jpeg") {
						req.format = "jpeg";
						if (p.quality !== undefined)
							req.quality = Math.max(1, Math.min(100, Math.round(p.quality <= 1 ? p.quality * 100 : p.quality)));
					}
					let reply;
					try {
						reply = await conn.call(req);
					} catch (e) {
						throw daemonError(e);
					}
					const img = reply.image;
					return JSON.stringify({
						format: img.mime_type === "image/jpeg" ? "jpeg" : "png",
						base64: img.data,
						displayFrameId: frameId(img.frame),
						screenIndex: 0,
						width: img.width,
						height: img.height,
						capturedAtMs: Date.now(),
					});
				},
				async act(paramsJSON) {
					const p = sdk.parseComputerActParamsJSON(paramsJSON);
					if (p.screenIndex !== undefined && p.screenIndex !== 0)
						throw fail("INVALID_REQUEST", `no screen ${p.screenIndex}: bureau has one screen`);
					const req = actRequest(p);
					// A frame id from this generation pins the action to the
					// screen the caller saw: bureaud refuses a stale frame.
					const m = typeof p.displayFrameId === "string" && p.displayFrameId.match(/^bureau:(.+):(\d+)$/);
					if (p.displayFrameId !== undefined) {
						if (!m || m[1] !== generation)
							throw fail("STALE_FRAME", `frame '${p.displayFrameId}' is not from this bureau execution`);
					}
					let reply;
					try {
						reply = await conn.call(req, req.duration ? req.duration + 5 : 0);
					} catch (e) {
						throw daemonError(e);
					}
					const out = { ok: true, effect: "unverifiable", details: {} };
					if (reply.image) {
						out.observation = observation(reply);
						out.details.displayFrameId = frameId(reply.image.frame);
					}
					if (reply.coordinate)
						out.details.coordinate = reply.coordinate;
					if (reply.output)
						out.details.output = reply.output;
					return JSON.stringify(out);
				},
				async close() {
					// nothing held per execution: the connection is shared
				},
			};
		},
	};
}
