/*
 * runtime/frames.h: the frame publisher. A thread that publishes a JPEG of
 * the screen on the events socket ("frame <json>\n<jpeg>") whenever the
 * screen changed, at most once per frame_interval_ms: Mission Control's
 * live view. An idle screen costs nothing: the thread sleeps on the damage
 * counter.
 */
#ifndef BUREAU_RUNTIME_FRAMES_H
#define BUREAU_RUNTIME_FRAMES_H

#include "tools/tool.h"

/* Start after the tools' init (needs the display; does nothing without
 * one, without cfg->publish or with frame_interval_ms 0). */
void bd_frames_start(const struct tool_config *cfg);
/* Stop and join, before the tools' fini. */
void bd_frames_stop(void);

#endif
