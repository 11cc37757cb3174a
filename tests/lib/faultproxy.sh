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

# proxy_mode MODE: the proxy's next mode; returns once the proxy has read
# it (it re-reads the control file within 100 ms, and its stats then name
# the file's size and mtime), a diagnostic and status 1 after 3 s without.
# A write whose size and mtime are the last one's (the same length within
# one clock tick) would go unseen: it is written again a tick later.
PROXY_STAMP=
proxy_mode() {
	local stamp line i
	printf '%s\n' "$1" >"$PROXY_DIR/control"
	stamp=$(stat -c '%s:%.9Y' "$PROXY_DIR/control")
	if [ "$stamp" = "$PROXY_STAMP" ]; then
		sleep 0.02
		printf '%s\n' "$1" >"$PROXY_DIR/control"
		stamp=$(stat -c '%s:%.9Y' "$PROXY_DIR/control")
	fi
	PROXY_STAMP=$stamp
	for ((i = 0; i < 150; i++)); do
		read -r line <"$PROXY_DIR/stats" 2>/dev/null
		case " $line " in *" control=$stamp "*) return 0 ;; esac
		sleep 0.02
	done
	diag "faultproxy did not take mode '$1' within 3 s (stats: $line)"
	return 1
}

# proxy_stat NAME: the proxy's counter NAME (failed, cut, lost, ...).
proxy_stat() {
	sed -n "s/.*$1=\([0-9]*\).*/\1/p" "$PROXY_DIR/stats"
}
