#!/usr/bin/env bash
# Peak RSS of bindery.fcgi while a document streams through lighttpd, for a
# small and a large document: streaming means the peak must not grow with
# the document.  A benchmark, not a test: it prints its figures.
#
#   ./dev up && tests/bench/bench_fcgi_rss.sh [SMALL_MIB [LARGE_MIB]]
#
# Uses the stack ./dev up started (var/bindery.conf, var/build/app), or
# BINDERY_CONFIG and BINDERY_TEST_BIN from a `./dev test --keep` run.  It
# starts its own lighttpd (one FastCGI process, streaming bodies) on a free
# port with a copy of the configuration whose upload limit fits the large
# document, and stops it afterwards.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
small=${1:-64} large=${2:-1024}
conf=${BINDERY_CONFIG:-$top/var/bindery.conf}
bin=${BINDERY_TEST_BIN:-$top/var/build/app}
[ -r "$conf" ] && [ -x "$bin/bindery.fcgi" ] || { echo "run ./dev up first (no $conf or $bin/bindery.fcgi)" >&2; exit 1; }
token=$(sed -n 's/^token = demo:\(.*\)/\1/p' "$conf" | head -n 1)
[ -n "$token" ] || { echo "no demo token in $conf" >&2; exit 1; }

work=$(mktemp -d)
chmod 755 "$work"
pid=
cleanup() { [ -z "$pid" ] || kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

# The same configuration with room for the large document.
sed -e "s/^max_upload = .*/max_upload = $((large + 1))M/" "$conf" >"$work/bindery.conf"
chmod 600 "$work/bindery.conf"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
	echo 18555)

run_one() { # MIB -> prints the peak RSS in KiB of the FastCGI process
	local mib=$1 fpid hwm code
	cat >"$work/lighttpd.conf" <<EOC
server.document-root = "$work"
server.port = $port
server.bind = "127.0.0.1"
server.errorlog = "$work/error.log"
server.stream-request-body = 1
server.max-request-size = $(((large + 2) * 1024))
server.modules = ("mod_fastcgi")
fastcgi.server = ("/" => (("socket" => "$work/fcgi.sock", "bin-path" => "$bin/bindery.fcgi",
	"bin-environment" => ("BINDERY_CONFIG" => "$work/bindery.conf"),
	"check-local" => "disable", "fix-root-scriptname" => "enable", "max-procs" => 1)))
EOC
	lighttpd -D -f "$work/lighttpd.conf" &
	pid=$!
	for _ in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
	fpid=$(pgrep -f "^$bin/bindery.fcgi" -P "$pid" | head -n 1)
	# lighttpd wants a Content-Length (411 for a chunked body): send a file.
	head -c "$((mib * 1024 * 1024))" /dev/urandom >"$work/doc.bin"
	code=$(curl -s -o "$work/answer" -w '%{http_code}' \
		-H "Authorization: Bearer $token" -H 'Content-Type: application/octet-stream' -H 'Expect:' \
		-T "$work/doc.bin" -X POST "http://127.0.0.1:$port/documents?name=rss-bench-$mib-$$-$RANDOM")
	[ "$code" = 201 ] || { echo "upload of $mib MiB answered $code" >&2; cat "$work/error.log" >&2; exit 1; }
	rm -f "$work/doc.bin"
	hwm=$(awk '$1 == "VmHWM:" { print $2 }' "/proc/$fpid/status")
	# The document was only a load: delete it (its blob goes through the outbox).
	curl -s -o /dev/null -X DELETE -H "Authorization: Bearer $token" \
		"http://127.0.0.1:$port/documents/$(sed -n 's/.*"id":"\([0-9]*\)".*/\1/p' "$work/answer")"
	kill "$pid"; wait "$pid" 2>/dev/null || true
	pid=
	echo "$hwm"
}

a=$(run_one "$small")
b=$(run_one "$large")
printf 'bindery.fcgi peak RSS through lighttpd (streaming): %d MiB document %d KiB, %d MiB document %d KiB\n' \
	"$small" "$a" "$large" "$b"
printf 'growth %d KiB for %dx the bytes (ratio %s)\n' "$((b - a))" "$((large / small))" \
	"$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b / a }')"
