#!/usr/bin/env bash
# stack_busy (tests/lib/stack.sh), which keeps a second `./dev bench` from
# removing the state directory of one still running (its closing sweep
# outlasts its table by minutes): a state directory is busy while a
# process of its own runs, by the pid file and the process's command line,
# never by a pid file alone.  Fake components stand in: `sleep` processes
# named like MariaDB and Azurite with the directory in their command line.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
. "$here/../lib/stack.sh"

work=$(mktemp -d)
pids=
trap 'for p in $pids; do kill "$p" 2>/dev/null; done; rm -rf "$work"' EXIT
dir=$work/stack
busy() { if stack_busy "$1"; then echo busy; else echo idle; fi; }
# fake NAME MARKER [DIR]: a process whose command line names MARKER and
# DIR (default $dir), its pid in $dir/run/NAME.pid and in $fake_pid, once
# it has become that process (a forked shell is not yet).
fake() {
	local i
	(exec -a "$2 --datadir=${3:-$dir}" sleep 120) >/dev/null 2>&1 &
	fake_pid=$!
	pids="$pids $fake_pid"
	for ((i = 0; i < 100; i++)); do
		case $(tr '\0' ' ' <"/proc/$fake_pid/cmdline" 2>/dev/null) in "$2 "*) break ;; esac
		sleep 0.05
	done
	echo "$fake_pid" >"$dir/run/$1.pid"
}

is "$(busy "$dir")" idle "a directory that was never started is idle"
is "$([ -e "$dir" ] && echo made || echo absent)" absent "... and is not created by asking"
mkdir -p "$dir/run"
is "$(busy "$dir")" idle "a started directory with no pid files is idle"
fake mariadb mariadbd
is "$(busy "$dir")" busy "its MariaDB runs: busy"
kill "$fake_pid" && wait "$fake_pid" 2>/dev/null
is "$(busy "$dir")" idle "that MariaDB gone (its pid file left behind): idle"
fake azurite azurite-blob
is "$(busy "$dir")" busy "its Azurite runs: busy"
kill "$fake_pid" && wait "$fake_pid" 2>/dev/null
fake azurite azurite-blob "$work/other"
is "$(busy "$dir")" idle "a live pid whose process belongs to another directory: idle"
echo "$$" >"$dir/run/mariadb.pid"
is "$(busy "$dir")" idle "a live pid of something else (this test): idle"
done_testing
