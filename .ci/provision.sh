# .ci/provision.sh - what a fresh Debian 12 machine needs for bindery's
# stack, tests and benches: the Debian packages (apt) and node_modules
# (npm, exact versions).  Sourced by ./dev (up, test, bench, cluster) after
# it defines say, die and TOP; ensure_deps installs only what is missing.

AZURITE_VERSION=3.37.0
# The browser test (tests/e2e/browser.sh) drives Debian's chromium with it.
PLAYWRIGHT_VERSION=1.65.1
# The tus client test (tests/e2e/tus_client.sh) and tests/bench/bench_tus.sh.
TUS_JS_CLIENT_VERSION=4.3.1
APT_PACKAGES=(build-essential autoconf automake pkg-config libfcgi-dev
	libcurl4-gnutls-dev libgnutls28-dev libmariadb-dev libjansson-dev
	libinih-dev libexpat1-dev nettle-dev libmagic-dev mariadb-server lighttpd apache2
	libapache2-mod-fcgid curl ca-certificates iproute2 clang
	libclang-rt-14-dev valgrind jq python3
	python3-yaml python3-jsonschema	# tests/e2e/openapi.sh
	python3-prometheus-client	# tests/e2e/status.sh, metrics.sh: someone else's reading of /metrics
	python3-cryptography	# tests/tools/fake_entra.py: verifies Entra's PS256 client assertions
	bc bsdextrautils	# these two: tests/bench/bench.sh (bc, column)
	ccache	# ./dev test's two builds (dev: test_ccache)
	galera-4 rsync	# ./dev cluster (tests/lib/cluster.sh)
	# clamd and, in clamav, sigtool: tests/lib/clamd.sh runs a clamd of each
	# test's own on a signature database sigtool makes from EICAR, so no
	# network.  The package's own clamd and freshclam services stay down
	# (policy-rc.d below) and unused: the system clamd has no database.
	clamav-daemon clamav
	systemd)	# systemd-analyze, systemd-socket-activate: tests/unit/systemd_units.sh, tests/dist/deb.sh, tests/e2e/pool.sh

pkg_installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

ensure_packages() {
	local missing=() p rc policy=/usr/sbin/policy-rc.d made_policy=
	for p in "${APT_PACKAGES[@]}"; do
		pkg_installed "$p" || missing+=("$p")
	done
	# nodejs may come from NodeSource (with npm inside it): only ask apt when absent.
	command -v node >/dev/null 2>&1 || missing+=(nodejs)
	command -v npm >/dev/null 2>&1 || missing+=(npm)
	[ ${#missing[@]} -eq 0 ] && return 0
	[ "$(id -u)" = 0 ] || die "missing packages (run as root, or apt-get install them): ${missing[*]}"
	say "installing: ${missing[*]}"
	# Keep the packages' own services (apache2, lighttpd, mariadb) from
	# starting on the system ports: ./dev runs private instances instead.
	if [ ! -e "$policy" ]; then
		printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q && apt-get install -y -q --no-install-recommends "${missing[@]}"
	rc=$?
	[ -n "$made_policy" ] && rm -f "$policy"
	[ $rc -eq 0 ] || die "apt-get install failed"
}

# npm_installed PACKAGE VERSION: node_modules holds exactly that version.
npm_installed() {
	grep -q "\"version\": \"$2\"" "$TOP/node_modules/$1/package.json" 2>/dev/null
}

azurite_installed() {
	[ -x "$TOP/node_modules/.bin/azurite-blob" ] && npm_installed azurite "$AZURITE_VERSION"
}

# What ./dev keeps between clean clones on one machine (node_modules, the
# compiler cache): the user's cache directory, or /tmp without a HOME.
dev_cache_dir() {
	printf '%s/bindery' "${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}"
}

# Azurite, playwright-core for the browser test and tus-js-client for the
# tus client test, which every ./dev test runs.  One npm command for all:
# without a package.json, npm removes whatever an install does not name.
ensure_azurite() {
	local want=("azurite@$AZURITE_VERSION" "playwright-core@$PLAYWRIGHT_VERSION"
		"tus-js-client@$TUS_JS_CLIENT_VERSION")
	local cache
	cache=$(dev_cache_dir)/node_modules-$AZURITE_VERSION-$PLAYWRIGHT_VERSION-$TUS_JS_CLIENT_VERSION
	npm_all_installed && return 0
	# A clean clone on a machine that installed these exact versions before
	# takes them from the cache: a hard-linked copy (1 s) instead of npm
	# install (17 s and 50 CPU seconds even with every tarball cached).
	if [ -d "$cache/.bin" ] && rm -rf "${TOP:?}/node_modules" && cp -al "$cache" "$TOP/node_modules" 2>/dev/null &&
		npm_all_installed; then
		return 0
	fi
	# From empty: a cache copy that failed half-way leaves no stray files.
	rm -rf "${TOP:?}/node_modules"
	say "npm install ${want[*]} into node_modules/"
	# --prefer-offline: the versions are exact, so a cached one is the one;
	# on a fresh machine it fetches as usual (45 s to 17 s here).
	npm install --prefix "$TOP" --no-save --no-package-lock --no-audit --no-fund --prefer-offline \
		--loglevel=error "${want[@]}" >&2 || die "npm install ${want[*]} failed"
	azurite_installed || die "node_modules/.bin/azurite-blob missing after npm install"
	npm_installed playwright-core "$PLAYWRIGHT_VERSION" ||
		die "node_modules/playwright-core missing after npm install"
	npm_installed tus-js-client "$TUS_JS_CLIENT_VERSION" ||
		die "node_modules/tus-js-client missing after npm install"
	# Nothing writes inside node_modules after this (Azurite keeps its data
	# in --location, Chromium lives in the system), so the links are safe;
	# another file system, or no room, only means no cache.
	mkdir -p "${cache%/*}" && rm -rf "$cache.new" && cp -al "$TOP/node_modules" "$cache.new" 2>/dev/null &&
		rm -rf "$cache" && mv "$cache.new" "$cache" || rm -rf "$cache.new"
}

npm_all_installed() {
	azurite_installed && npm_installed playwright-core "$PLAYWRIGHT_VERSION" &&
		npm_installed tus-js-client "$TUS_JS_CLIENT_VERSION"
}

ensure_deps() {
	ensure_packages
	ensure_azurite
}

