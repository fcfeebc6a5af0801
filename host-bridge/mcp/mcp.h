/*
 * host-bridge/mcp: `bureau mcp NAME`, a Model Context Protocol server on
 * stdio for one desktop (DESIGN.md, "Where agents already are"). It speaks
 * JSON-RPC 2.0, one message per line, on stdin and stdout, and sends every
 * tool call to the desktop's host agent through libbureau, like any agent
 * loop: the operator's policy, approvals, takeover and audit trail apply.
 */
#ifndef BUREAU_MCP_H
#define BUREAU_MCP_H

#include <stdio.h>

struct mcp_opts {
	const char *url;   /* the desktop's endpoint (its host agent) */
	const char *token; /* the agent token, or NULL */
	const char *name;  /* the desktop's name, for the server's title, or
	                      NULL */
	double timeout;    /* seconds per call; <= 0: computed per call (the
	                      tool's own time limit plus the approval wait) */
};

/*
 * Serve MCP on in/out until in ends. Diagnostics go to stderr (stdout is
 * the protocol's). Returns the process's exit status: 0 after the client
 * closed stdin, 1 when out could not be written or memory ran out.
 */
int mcp_serve(const struct mcp_opts *o, FILE *in, FILE *out);

#endif
