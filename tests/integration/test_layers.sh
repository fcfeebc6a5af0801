#!/usr/bin/env bash
# The layers hold: every #include "folder/..." of the tree's C sources
# points down or sideways into an allowed folder, never up (DESIGN.md,
# "Layout"; issues 24 and 39). The daemon: runtime -> tools -> x11 ->
# capture, common/ shared. The host side: cli/ on top; Mission Control and
# the host agent below it; the lifecycle library (desk/) under those; the
# operator-socket client, the VM backend, the client library, the store
# and util under it; common/ shared. Neither side reaches into the other's
# folders. Prints PASS/FAIL per folder, as tests/run.sh counts.
#
#   test_layers.sh [BUILD_DIR]   (the argument is ignored: no build needed)
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 2

# folder: the folders its sources may include from (besides itself)
declare -A allow=(
	[common]=""
	[capture]="common"
	[x11]="capture common"
	[tools]="x11 capture common"
	[runtime]="tools x11 capture common"
	[host-bridge/include]="common"
	[host-bridge/util]="common"
	[host-bridge/store]="host-bridge/util common"
	[host-bridge/lib]="host-bridge/include common"
	[host-bridge/vm]="host-bridge/store host-bridge/util host-bridge/include common"
	[host-bridge/opclient]="host-bridge/store host-bridge/util host-bridge/include common"
	[host-bridge/desk]="host-bridge/opclient host-bridge/lib host-bridge/vm host-bridge/store host-bridge/util host-bridge/include common"
	[host-bridge/agent]="host-bridge/desk host-bridge/lib host-bridge/vm host-bridge/store host-bridge/util host-bridge/include common"
	[host-bridge/mc]="host-bridge/desk host-bridge/opclient host-bridge/vm host-bridge/store host-bridge/util host-bridge/include common"
	[host-bridge/mcp]="host-bridge/include common"
	[host-bridge/cli]="host-bridge/mcp host-bridge/mc host-bridge/agent host-bridge/desk host-bridge/opclient host-bridge/lib host-bridge/vm host-bridge/store host-bridge/util host-bridge/include common"
)

# The folder a path "a/b/c.h" names: host-bridge/X for host-bridge/X/...,
# else its first component.
folder_of() {
	case "$1" in
	host-bridge/*/*) echo "${1%/*}" | cut -d/ -f1-2 ;;
	*/*) echo "${1%%/*}" ;;
	*) echo "" ;;
	esac
}

failed=0
# Every folder with C sources must have a rule: a new one is a decision.
for f in $(find runtime tools x11 capture common host-bridge -name '*.[ch]' \
	-not -path '*/node_modules/*' | sort); do
	d=$(folder_of "$f")
	if [ -z "${allow[$d]+x}" ]; then
		echo "FAIL layers_known: $f is in $d, which has no rule in $0"
		failed=1
	fi
done
[ $failed = 0 ] && echo "PASS layers_known"

for d in $(printf '%s\n' "${!allow[@]}" | sort); do
	bad=
	for f in "$d"/*.[ch]; do
		[ -e "$f" ] || continue
		# quoted includes only: <...> are system headers
		while IFS= read -r inc; do
			case "$inc" in
			../../common/*) t=common ;; # bureau.h beside its installed header
			*/*) t=$(folder_of "$inc") ;;
			*) continue ;; # same folder
			esac
			[ "$t" = "$d" ] && continue
			case " ${allow[$d]} " in
			*" $t "*) ;;
			*) bad="$bad $f->$inc" ;;
			esac
		done < <(sed -n 's/^#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
	done
	name=layers_$(echo "$d" | tr '/-' '__')
	if [ -z "$bad" ]; then
		echo "PASS $name"
	else
		echo "FAIL $name: includes against the layers:$bad"
	fi
done

# libbureau's private header stays private to it.
priv=$(grep -rln --include='*.[ch]' '#[[:space:]]*include[[:space:]]*"host-bridge/lib/internal.h"' \
	runtime tools x11 capture common host-bridge | grep -v '^host-bridge/lib/')
if [ -z "$priv" ]; then
	echo "PASS layers_lib_internal_private"
else
	echo "FAIL layers_lib_internal_private: included by" $priv
fi
