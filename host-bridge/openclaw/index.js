// The bureau OpenClaw plugin: tools that see and drive a bureau desktop
// (bureaud over nng, through libbureau.so) and, when enabled, bureau as a
// node host's Computer Use provider. See docs/client-openclaw.md.

import fs from "node:fs";
import * as computerUseSdk from "openclaw/plugin-sdk/computer-use";
import { buildJsonPluginConfigSchema, definePluginEntry } from "openclaw/plugin-sdk/plugin-entry";
import { createComputerUseProvider } from "./src/computer-use.js";
import { createTools } from "./src/tools.js";

const manifest = JSON.parse(fs.readFileSync(new URL("./openclaw.plugin.json", import.meta.url), "utf8"));

export default definePluginEntry({
	id: manifest.id,
	name: manifest.name,
	description: manifest.description,
	configSchema: buildJsonPluginConfigSchema(manifest.configSchema),
	register(api) {
		const config = api.pluginConfig ?? {};
		const { conn, tools } = createTools(config, api.rootDir);
		for (const tool of tools)
			api.registerTool(tool, { name: tool.name });
		// Opt-in: a node host has one Computer Use provider, and the
		// command pair it registers must not shadow another one by default.
		if (config.computerUse === true && typeof api.registerNodeHostCommand === "function")
			computerUseSdk.registerComputerUseProvider(api, createComputerUseProvider(conn, computerUseSdk));
	},
});
