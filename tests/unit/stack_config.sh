#!/usr/bin/env bash
# The bindery.conf the stacks render (stack_write_config, tests/lib/stack.sh)
# turns GET /metrics on for `./dev up` (kind dev) as for `./dev test` (kind
# test), for any caller who may write (the demo token `./dev up` prints),
# with its counters file in the www directory's metrics/, which the web
# server's user (www-data, running Apache's responders and the pool) may
# write even when the checkout sits in a 0700 directory; and bindery loads
# the file.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/stack.sh"

BIN=${top_builddir:?}/app
[ -x "$BIN/bindery" ] && [ -x "$BIN/bindery.fcgi" ] || bail_out "$BIN/bindery is not built"
work=$(mktemp -d) || bail_out "mktemp -d failed"	# 0700: closed to www-data, as a private clone is
trap 'stack_remove_www; rm -rf "$work"' EXIT

# metrics_key CONF KEY: KEY's value in CONF's [metrics] section.
metrics_key() {
	awk -v k="$2" '/^\[/ { sec = $0 } sec == "[metrics]" && $1 == k && $2 == "=" { print $3 }' "$1"
}

stack_init "$work/stack"
stack_secrets
BLOB_PORT=10000 DB_PORT=3306
for kind in dev test; do
	mode=socket
	[ "$kind" = test ] && mode=tcp
	stack_write_config "$work/$kind.conf" "$mode" "$kind" || bail_out "stack_write_config $kind failed"
	www=$(stack_www_dir)
	is "$(metrics_key "$work/$kind.conf" enabled)" true "$kind: [metrics] enabled = true"
	is "$(metrics_key "$work/$kind.conf" owner)" "" "$kind: no [metrics] owner: any caller who may write"
	is "$(metrics_key "$work/$kind.conf" counters_file)" "$www/metrics/counters" \
		"$kind: counters_file in the www directory's metrics/"
	err=$(env -u BINDERY_CONFIG "$BIN/bindery" -c "$work/$kind.conf" lifecycle-policy 2>&1 >/dev/null)
	is "$?" 0 "$kind: bindery loads it"
	[ -z "$err" ] || diag "$err"
done
stack_www_prepare "$BIN" "$work/dev.conf" || bail_out "stack_www_prepare failed"
if [ "$(id -u)" = 0 ] && getent passwd "$STACK_WWW_USER" >/dev/null; then
	ok "runuser -u '$STACK_WWW_USER' -- test -w '$www/metrics'" \
		"$STACK_WWW_USER may create the counters file in $www/metrics"
else
	ok "test -w '$www/metrics'" "the counters directory $www/metrics is writable"
fi
done_testing
