/*
 * host-bridge/desk/desk_text.c: what a call did, in the words `bureau`
 * prints and Mission Control's API returns as "output" (one text for
 * both, so they never say it differently). A desktop on another machine
 * says it in its bureau's own words (said).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host-bridge/desk/desk.h"
#include "host-bridge/util/util.h"

/* said as it is, its last newline dropped (malloc'd). */
static char *
text_said(const char *said)
{
	char *s = strdup(said);
	size_t n = s ? strlen(s) : 0;

	while (n > 0 && s[n - 1] == '\n')
		s[--n] = '\0';
	return (s);
}

char *
desk_stop_text(const char *name, const struct desk_stop_res *r)
{
	if (r->said != NULL)
		return (text_said(r->said));
	switch (r->how) {
	case DESK_STOPPED_SAVED:
		return (hb_fmt("stopped desktop '%s' (saved in %.1f s: the "
		               "next start restores it)",
		    name, r->seconds));
	case DESK_STOPPED_SHUTDOWN:
		return (hb_fmt("stopped desktop '%s' (shut down in %.1f s)",
		    name, r->seconds));
	case DESK_STOPPED_FORCED:
		return (hb_fmt("stopped desktop '%s' (forced)", name));
	case DESK_STOPPED_DISCARDED:
		return (hb_fmt("stopped and discarded the ephemeral fork '%s'",
		    name));
	case DESK_STOPPED_IDLE:
		return (hb_fmt("stopped desktop '%s' (it was saved while idle: "
		               "the next start restores it)",
		    name));
	case DESK_STOPPED_STATE_GONE:
		return (hb_fmt("stopped desktop '%s' (discarded its saved "
		               "state: the next start boots)",
		    name));
	default:
		return (hb_fmt("desktop '%s' is not running", name));
	}
}

char *
desk_start_text(const char *name, int nowait, const struct desk_start_res *r)
{
	if (r->said != NULL)
		return (text_said(r->said));
	if (nowait)
		return (hb_fmt("%s desktop '%s' (%s), not waiting for the "
		               "daemon",
		    r->adopted      ? "adopted" :
		        r->restored ? "restored" :
		                      "started",
		    name, r->accel));
	/* the live view: QEMU's own VNC server on a unix socket in the
	 * 0700 desktop directory (Mission Control, or socat + a viewer) */
	if (r->adopted)
		return (hb_fmt("adopted desktop '%s' (%s), whose VM ran on "
		               "without its host agent, in %.1f s\n"
		               "endpoint tcp://127.0.0.1:%d\nevents "
		               "tcp://127.0.0.1:%d\nvnc %s",
		    name, r->accel, r->seconds, r->port, r->port + 1,
		    r->vnc ? r->vnc : "?"));
	return (hb_fmt("%s desktop '%s' (%s) in %.1f s (drawn %.1f s after the "
	               "daemon answered)\nendpoint tcp://127.0.0.1:%d\nevents "
	               "tcp://127.0.0.1:%d\nvnc %s",
	    r->restored ? "restored" : "started", name, r->accel, r->seconds,
	    r->drawn_s, r->port, r->port + 1, r->vnc ? r->vnc : "?"));
}

char *
desk_snap_text(const char *name, const char *tag, int restore,
    const struct desk_snap_res *r)
{
	if (r->said != NULL)
		return (text_said(r->said));
	if (!r->live)
		return (hb_fmt("%s desktop '%s' %s '%s' (disks%s)",
		    restore ? "restored" : "snapshot of", name,
		    restore ? "to" : "saved as", tag,
		    !r->saved   ? "" :
		        restore ? "; its saved state discarded: the next "
		                  "start boots" :
		                  "; its saved state stays: the next start "
		                  "restores it"));
	if (!restore)
		return (hb_fmt("snapshot of desktop '%s' saved as '%s' (live: "
		               "disks and memory)",
		    name, tag));
	return (hb_fmt("restored desktop '%s' to '%s' (live)", name, tag));
}
