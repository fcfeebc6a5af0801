# Start the desktop's X session on tty1 for the autologin user. The screen
# saver and DPMS are off: an agent's screen must never go black.
if [ -z "${DISPLAY:-}" ] && [ "$(tty)" = /dev/tty1 ] && [ "$(id -un)" = bureau ]; then
	exec startx -- -nolisten tcp -s 0 -dpms >"/tmp/startx-$(id -u).log" 2>&1
fi
