# tests/lib/clamd.sh — a private clamd of a test's own (bash, sourced).
#
# Each test runs its own clamd (Debian's clamav-daemon binary), so tests
# that stop or freeze it never disturb another's: its own clamd.conf, its
# unix socket in the test's directory, a TCP port on 127.0.0.1 when asked,
# Foreground, and its own DatabaseDirectory holding one signature built
# here by sigtool from the EICAR test string, so nothing needs the network
# (freshclam never runs).  Stopped by its PID, never by name.
#
#   . "$here/../lib/clamd.sh"
#   clamd_need                    missing (a skip by hand, a failure under
#                                 ./dev test) unless clamd and sigtool are here
#   clamd_write_eicar FILE        the 68-byte EICAR test file
#   clamd_start DIR [KEY=VALUE...]
#                                 start a clamd in DIR (made if absent) and
#                                 wait until it answers PING (CLAMD_WAIT
#                                 seconds, 30 by default); status 1 with a line
#                                 on stderr when it does not.  Run it in the
#                                 test's own shell, not in $(...): the
#                                 variables below are set there.
#   clamd_stop                    SIGTERM to CLAMD_PID (and SIGCONT, should
#                                 the test have stopped it), SIGKILL after
#                                 10 s; waits for it.  Safe in an EXIT trap,
#                                 and when nothing runs.
#
# clamd_start's KEY=VALUE:
#   tcp=1                         also listen on a free port of 127.0.0.1
#   StreamMaxLength=SIZE          25M: Debian's clamd.conf (clamd's own
#   MaxFileSize=SIZE              25M   built-in defaults are 100M, 100M,
#   MaxScanSize=SIZE              100M  400M; Debian's package ships these)
#   AlertExceedsMax=yes|no        no
#   include=FILE                  FILE's settings (its lines that are not
#                                 comments), as an administrator merges
#                                 conf/clamd-bindery.conf into clamd.conf
#   Any other KEY=VALUE is a clamd.conf(5) line "KEY VALUE".
# A later setting of a key replaces an earlier one (the file holds one line
# a key: clamd itself would keep the first).
#
# Sets:
#   CLAMD_DIR CLAMD_CONF          the state directory and its clamd.conf
#   CLAMD_SOCKET CLAMD_UNIX       the unix socket, and as an address: unix:PATH
#   CLAMD_PORT CLAMD_TCP          the TCP port and 127.0.0.1:PORT ('' without tcp=1)
#   CLAMD_PID CLAMD_LOG           clamd's PID; its output (clamd.out in DIR)
#   CLAMD_START_MS                milliseconds from the start to its first PONG
#   CLAMD_SIGNATURE               the name clamd gives the EICAR signature
#                                 (Bindery.Test.EICAR.UNOFFICIAL: clamd adds
#                                 .UNOFFICIAL to a database not signed by its
#                                 project)
#
# A clamd with this one-signature database starts in about a second here
# (it is the official databases, 300 MB of them, that take a minute).

CLAMD_BIN=${CLAMD_BIN:-/usr/sbin/clamd}
CLAMD_EICAR_MD5=44d88612fea8a8f36de82e1278abb02f
CLAMD_SIGNATURE=Bindery.Test.EICAR.UNOFFICIAL
CLAMD_PID='' CLAMD_DIR='' CLAMD_CONF='' CLAMD_SOCKET='' CLAMD_UNIX='' CLAMD_PORT='' CLAMD_TCP=''
CLAMD_LOG='' CLAMD_START_MS=''

clamd_log() { printf 'clamd.sh: %s\n' "$*" >&2; }

clamd_need() {
	[ -x "$CLAMD_BIN" ] || missing "$CLAMD_BIN is not installed (Debian's clamav-daemon)"
	command -v sigtool >/dev/null || missing "sigtool is not installed (Debian's clamav)"
	command -v python3 >/dev/null || missing "python3 is not installed"
	command -v ss >/dev/null || missing "ss is not installed (iproute2)"
}

# The EICAR test file (eicar.org): printable ASCII, so printf '%s' writes
# exactly its 68 bytes; its MD5 is checked.
clamd_write_eicar() {
	printf '%s' 'X5O!P%@AP[4\PZX54(P^)7CC)7}$EICAR-STANDARD-ANTIVIRUS-TEST-FILE!$H+H*' >"$1" || return 1
	[ "$(md5sum <"$1")" = "$CLAMD_EICAR_MD5  -" ] || { clamd_log "$1 is not the EICAR file"; return 1; }
}

# clamd_database DIR: one body signature (.ndb, clamd's "extended"
# format: NAME:TARGET:OFFSET:HEX, target 0 any file, offset * anywhere),
# so EICAR is found at any offset of a stream, not only as a whole file.
clamd_database() {
	local dir=$1 hex
	mkdir -p "$dir" || return 1
	clamd_write_eicar "$dir/eicar.src" || return 1
	hex=$(sigtool --hex-dump <"$dir/eicar.src") || { clamd_log "sigtool --hex-dump failed"; return 1; }
	[ ${#hex} -eq 136 ] || { clamd_log "sigtool --hex-dump gave ${#hex} digits, not 136"; return 1; }
	rm -f "$dir/eicar.src"
	printf '%s:0:*:%s\n' "${CLAMD_SIGNATURE%.UNOFFICIAL}" "$hex" >"$dir/bindery-test.ndb"
}

# clamd_free_port BASE: the first port from BASE + STACK_PORT_OFFSET that
# nothing listens on and the lane's stack has not taken.
clamd_free_port() {
	local p=$(($1 + ${STACK_PORT_OFFSET:-0})) avoid=' '
	[ -n "${BINDERY_TEST_VAR:-}" ] && [ -f "$BINDERY_TEST_VAR/ports.env" ] &&
		avoid=" $(sed -n 's/^[A-Z_]*=//p' "$BINDERY_TEST_VAR/ports.env" | tr '\n' ' ') "
	while [ "$p" -lt 65000 ]; do
		case $avoid in *" $p "*) ;; *) [ -z "$(ss -Hltn "sport = :$p" 2>/dev/null)" ] && break ;; esac
		p=$((p + 1))
	done
	[ "$p" -lt 65000 ] && printf '%s\n' "$p"
}

# clamd_ours: CLAMD_PID is alive and is the clamd of CLAMD_CONF (a PID the
# system gave to someone else is never signalled).
clamd_ours() {
	local cmd state
	[ -n "$CLAMD_PID" ] && [ -r "/proc/$CLAMD_PID/cmdline" ] || return 1
	state=$(sed -e 's/^.*) //' "/proc/$CLAMD_PID/stat" 2>/dev/null | cut -c1)
	[ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ] || return 1
	cmd=$({ tr '\0' ' ' <"/proc/$CLAMD_PID/cmdline"; } 2>/dev/null)
	case $cmd in *clamd*"$CLAMD_CONF"*) return 0 ;; esac
	return 1
}

clamd_start() {
	local dir=$1 key value tcp='' port t0 i
	local -a settings=("StreamMaxLength 25M" "MaxFileSize 25M" "MaxScanSize 100M" "AlertExceedsMax no")
	shift
	[ -z "$CLAMD_PID" ] || { clamd_log "a clamd of this test runs already (pid $CLAMD_PID)"; return 1; }
	for i in "$@"; do
		key=${i%%=*} value=${i#*=}
		case $key in
		tcp) tcp=$value ;;
		include)
			[ -r "$value" ] || { clamd_log "cannot read $value"; return 1; }
			mapfile -t -O "${#settings[@]}" settings < <(grep -Ev '^[[:space:]]*(#|$)' "$value") ;;
		*) settings+=("$key $value") ;;
		esac
	done
	mkdir -p "$dir/db" "$dir/tmp" || return 1
	CLAMD_DIR=$(cd "$dir" && pwd)
	CLAMD_CONF=$CLAMD_DIR/clamd.conf CLAMD_SOCKET=$CLAMD_DIR/clamd.sock CLAMD_LOG=$CLAMD_DIR/clamd.out
	CLAMD_UNIX=unix:$CLAMD_SOCKET CLAMD_PORT='' CLAMD_TCP=''
	# sun_path holds 107 bytes and a NUL.
	[ ${#CLAMD_SOCKET} -le 107 ] || { clamd_log "$CLAMD_SOCKET is too long for a unix socket"; return 1; }
	[ -s "$CLAMD_DIR/db/bindery-test.ndb" ] || clamd_database "$CLAMD_DIR/db" || return 1
	{
		printf '%s\n' "# clamd of a test (tests/lib/clamd.sh)" \
			"Foreground yes" "LocalSocket $CLAMD_SOCKET" "FixStaleSocket yes" \
			"DatabaseDirectory $CLAMD_DIR/db" "TemporaryDirectory $CLAMD_DIR/tmp" \
			"PidFile $CLAMD_DIR/clamd.pid" "LogFile $CLAMD_DIR/clamd.log" "LogTime yes" \
			"SelfCheck 0"
		# clamd keeps the first value of a key it reads twice: one line a
		# key, the last value given, in the order first given.
		printf '%s\n' "${settings[@]}" | awk '{ k = $1; if (!(k in v)) o[n++] = k; sub(/^[^ \t]+[ \t]+/, ""); v[k] = $0 }
			END { for (i = 0; i < n; i++) print o[i], v[o[i]] }'
	} >"$CLAMD_CONF"
	if [ -n "$tcp" ] && [ "$tcp" != 0 ]; then
		port=$(clamd_free_port 19900) || { clamd_log "no free port"; return 1; }
		printf 'TCPSocket %s\nTCPAddr 127.0.0.1\n' "$port" >>"$CLAMD_CONF"
		CLAMD_PORT=$port CLAMD_TCP=127.0.0.1:$port
	fi
	rm -f "$CLAMD_SOCKET" "$CLAMD_DIR/clamd.pid"
	t0=${EPOCHREALTIME/./}
	# A session of its own: a process group that becomes orphaned while one
	# of its members is stopped is sent SIGHUP and SIGCONT by the kernel, so
	# a clamd in the test's group, frozen by a test (SIGSTOP), could wake up
	# mid-check when some other member of that group exits.  (setsid runs it
	# in place: a background job is no group leader, so $! stays clamd's.)
	setsid "$CLAMD_BIN" -c "$CLAMD_CONF" </dev/null >>"$CLAMD_LOG" 2>&1 &
	CLAMD_PID=$!
	# One python3 asks PING until PONG (its connect and reads bounded), or
	# gives up when clamd exits or the time is spent.
	if ! python3 - "$CLAMD_SOCKET" "$CLAMD_PID" "${CLAMD_WAIT:-30}" <<-'EOF'; then
		import os, socket, sys, time
		path, pid, limit = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
		end = time.monotonic() + limit
		while time.monotonic() < end:
		    try:
		        os.kill(pid, 0)
		    except OSError:
		        sys.exit("clamd exited")
		    try:
		        s = socket.socket(socket.AF_UNIX)
		        s.settimeout(1)
		        s.connect(path)
		        s.sendall(b"zPING\0")
		        if s.recv(16) == b"PONG\0":
		            sys.exit(0)
		    except OSError:
		        pass
		    finally:
		        s.close()
		    time.sleep(0.02)
		sys.exit("no PONG within %g s" % limit)
	EOF
		clamd_log "clamd did not start (pid $CLAMD_PID): $(tail -n 5 "$CLAMD_LOG" | tr '\n' ' ')"
		clamd_stop
		return 1
	fi
	CLAMD_START_MS=$(((${EPOCHREALTIME/./} - t0) / 1000))
	if [ -n "$CLAMD_PORT" ]; then
		# The port was free when chosen: it must be this clamd that holds it.
		ss -ltnpH "( sport = :$CLAMD_PORT )" 2>/dev/null | grep -q "pid=$CLAMD_PID," || {
			clamd_log "clamd (pid $CLAMD_PID) does not listen on 127.0.0.1:$CLAMD_PORT"
			clamd_stop
			return 1
		}
	fi
	return 0
}

clamd_stop() {
	local i
	if clamd_ours; then
		kill -TERM "$CLAMD_PID" 2>/dev/null
		kill -CONT "$CLAMD_PID" 2>/dev/null
		for ((i = 0; i < 100; i++)); do
			clamd_ours || break
			sleep 0.1
		done
		if clamd_ours; then
			clamd_log "clamd (pid $CLAMD_PID) ignored SIGTERM for 10 s: SIGKILL"
			kill -KILL "$CLAMD_PID" 2>/dev/null
		fi
	fi
	[ -z "$CLAMD_PID" ] || wait "$CLAMD_PID" 2>/dev/null
	CLAMD_PID=''
	return 0
}
