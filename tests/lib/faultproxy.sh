# tests/lib/faultproxy.sh — driving tests/tools/faultproxy (a TCP proxy that
# injects storage faults) from a shell test.  Sourced after tests/lib/tap.sh.
#
#   proxy_start DIR PROXY-ARGS...   start it (-t HOST:PORT or -S ...); files in DIR
#   proxy_mode "fail 503 2"         the next mode, through DIR/control
#   proxy_stat failed               a counter from DIR/stats
#
# FAULTPROXY is the program (default: the build tree's tests/tools/faultproxy).

FAULTPROXY=${FAULTPROXY:-${top_builddir:-${top:-.}}/tests/tools/faultproxy}

# proxy_start DIR PROXY-ARGS...: start the proxy with control file
# DIR/control (emptied: mode pass), stats DIR/stats, its port written to
# DIR/proxy.port and its stderr to DIR/proxy.log.  Sets PROXY_DIR, PROXY_PID
# and PROXY_PORT; fails when it has not written its port within 5 s.
proxy_start() {
	local i
	PROXY_DIR=$1
	shift
	: >"$PROXY_DIR/control"
	"$FAULTPROXY" "$@" -p "$PROXY_DIR/proxy.port" -c "$PROXY_DIR/control" -s "$PROXY_DIR/stats" \
		2>"$PROXY_DIR/proxy.log" &
	PROXY_PID=$!
	for ((i = 0; i < 50; i++)); do [ -s "$PROXY_DIR/proxy.port" ] && break; sleep 0.1; done
	[ -s "$PROXY_DIR/proxy.port" ] || return 1
	PROXY_PORT=$(cat "$PROXY_DIR/proxy.port")
}

# proxy_mode MODE: the proxy's next mode (it re-reads the control file
# within 100 ms).
proxy_mode() {
	printf '%s\n' "$1" >"$PROXY_DIR/control"
	sleep 0.3
}

# proxy_stat NAME: the proxy's counter NAME (failed, cut, lost, ...).
proxy_stat() {
	sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$PROXY_DIR/stats"
}
