#!/usr/bin/env python3
"""Map Anthropic tool_use blocks onto a bureau desktop and back.

An agent loop hands each tool_use block the model emits to ToolRunner.run,
and sends the returned tool_result block back in the next user message.
Three Anthropic tools are mapped:

  computer (computer_20250124 input)   -> bureaud tool "computer", verbatim
  bash (bash_20250124)                 -> bureaud tool "bash"
  str_replace_based_edit_tool          -> bureaud tool
      (or str_replace_editor)             "str_replace_based_edit_tool"

Without a model, --script replays a JSON list of tool_use blocks (or an
object with "tool_uses", or assistant messages whose content holds them)
and saves each screenshot in --out:

  agent_loop.py --url tcp://127.0.0.1:7300 --token-file tok \\
      --script demo_script.json --out demo-out

It prints one line per step, writes OUT/transcript.json (the tool_use and
tool_result blocks, image data replaced by the saved file name) and exits
1 if any step came back as an error.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                ".."))
import bureau  # noqa: E402

EDITOR_NAMES = ("str_replace_based_edit_tool", "str_replace_editor",
                "text_editor")


def _text(text):
    return {"type": "text", "text": text}


def _image(img):
    return {"type": "image",
            "source": {"type": "base64", "media_type": img.mime_type,
                       "data": img.base64}}


class ToolRunner:
    """Runs tool_use blocks on a bureau.Desktop, returns tool_result
    blocks. on_image(img, block) is called for every image returned."""

    def __init__(self, desktop, on_image=None):
        self.desktop = desktop
        self.on_image = on_image

    def run(self, block):
        name = block.get("name")
        args = block.get("input") or {}
        try:
            if name == "computer":
                content = self._computer(args, block)
            elif name == "bash":
                content = self._bash(args)
            elif name in EDITOR_NAMES:
                content = self._editor(args)
            else:
                return self._error(block, "unknown tool '%s'" % name)
        except bureau.Error as e:
            return self._error(block, "%s: %s" % (e.code, e.message))
        return {"type": "tool_result", "tool_use_id": block.get("id"),
                "content": content}

    def _error(self, block, message):
        return {"type": "tool_result", "tool_use_id": block.get("id"),
                "is_error": True, "content": [_text(message)]}

    def _computer(self, args, block):
        req = dict(args)
        req["tool"] = "computer"
        # hold_key and wait take as long as they say.
        wait = None
        if isinstance(args.get("duration"), (int, float)):
            wait = max(self.desktop.timeout, args["duration"] + 10)
        result = bureau.Result(self.desktop.call(req, timeout=wait))
        content = []
        if result.output:
            content.append(_text(result.output))
        if result.image is not None:
            if self.on_image is not None:
                self.on_image(result.image, block)
            content.append(_image(result.image))
        if not content:
            content.append(_text("done"))
        return content

    def _bash(self, args):
        if args.get("restart"):
            self.desktop.restart()
            return [_text("the bash session was restarted")]
        if "command" not in args:
            raise bureau.InvalidArgument("missing field 'command'")
        result = self.desktop.bash(args["command"],
                                   timeout=args.get("timeout"))
        text = result.output or ""
        if result.exit_code not in (None, 0):
            text += "%s[exit code %d]" % ("\n" if text else "",
                                          result.exit_code)
        return [_text(text or "(no output)")]

    def _editor(self, args):
        req = dict(args)
        req["tool"] = "str_replace_based_edit_tool"
        result = bureau.Result(self.desktop.call(req))
        return [_text(result.output or "done")]


def load_script(path):
    """The tool_use blocks of a script file."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    if isinstance(data, dict):
        data = data.get("tool_uses", data.get("messages", []))
    blocks = []
    for item in data:
        if item.get("type") == "tool_use":
            blocks.append(item)
        elif isinstance(item.get("content"), list):  # a message
            blocks.extend(b for b in item["content"]
                          if b.get("type") == "tool_use")
    return blocks


def summary(block):
    args = block.get("input") or {}
    what = args.get("action") or args.get("command") or ""
    if isinstance(what, str) and len(what) > 60:
        what = what[:57] + "..."
    return "%s %s" % (block.get("name"), what)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="Replay Anthropic tool_use blocks on a bureau desktop.")
    ap.add_argument("--url", default=os.environ.get("BUREAU_URL"),
                    help="daemon URL (default $BUREAU_URL or "
                    "tcp://127.0.0.1:7300)")
    ap.add_argument("--token-file", help="file holding the token "
                    "(default $BUREAU_TOKEN)")
    ap.add_argument("--desktop", metavar="NAME",
                    help="a desktop under $BUREAU_HOME instead of --url")
    ap.add_argument("--timeout", type=float, default=30.0,
                    help="seconds per call (default 30)")
    ap.add_argument("--script", required=True,
                    help="JSON file of tool_use blocks to replay")
    ap.add_argument("--out", default="agent-out",
                    help="directory for screenshots and transcript.json")
    opts = ap.parse_args(argv)

    blocks = load_script(opts.script)
    os.makedirs(opts.out, exist_ok=True)
    if opts.desktop:
        desktop = bureau.Desktop.from_name(opts.desktop,
                                           timeout=opts.timeout)
    else:
        token = None
        if opts.token_file:
            with open(opts.token_file, encoding="utf-8") as f:
                token = f.read().strip()
        desktop = bureau.Desktop(opts.url, token=token, timeout=opts.timeout)

    saved = {}
    step = [0]

    def on_image(img, block):
        action = (block.get("input") or {}).get("action", "image")
        name = "%03d-%s.png" % (step[0], action)
        img.save(os.path.join(opts.out, name))
        saved[img.base64] = name

    runner = ToolRunner(desktop, on_image=on_image)
    transcript, errors = [], 0
    with desktop:
        for i, block in enumerate(blocks, 1):
            step[0] = i
            result = runner.run(block)
            bad = result.get("is_error", False)
            errors += bad
            parts = []
            for c in result["content"]:
                if c["type"] == "text":
                    parts.append(c["text"].strip().replace("\n", " | ")[:80])
                else:
                    c["source"]["data"] = "<%s>" % saved.get(
                        c["source"]["data"], "image")
                    parts.append(c["source"]["data"])
            print("%3d %-5s %s -> %s" % (i, "ERROR" if bad else "ok",
                                         summary(block), "; ".join(parts)),
                  flush=True)
            transcript.append(block)
            transcript.append(result)
    with open(os.path.join(opts.out, "transcript.json"), "w",
              encoding="utf-8") as f:
        json.dump(transcript, f, ensure_ascii=False, indent=1)
    print("%d steps, %d errors; screenshots and transcript.json in %s"
          % (len(blocks), errors, opts.out))
    return 1 if errors else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except bureau.TransportError as e:
        print("agent_loop: %s" % e, file=sys.stderr)
        sys.exit(3)
