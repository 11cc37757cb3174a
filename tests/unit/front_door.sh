#!/usr/bin/env bash
# One door: the HTTP front end (app/ without the admin CLI's commands)
# reaches the database and storage only through lib/protocol/, so every
# document operation, read or write, follows the protocol's rules (ready
# rows only, pinned bytes, deadlines).  Only the CLI (app/cmd_*.c,
# app/bindery_cli.c, and app/cli.c, what its commands share: the causes of
# a database's or storage's failure) may call lib/registry/ or
# lib/storage/ itself.
#
# Read from the built objects (nm): a function a front-end object needs
# that an object of lib/registry/ or lib/storage/ defines is a call through
# the wrong door.  Run from the build directory (make check does).
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
build=${abs_top_builddir:-$PWD}

# Symbols defined (text) by the objects named.
defined() { nm -g --defined-only "$@" 2>/dev/null | awk 'NF == 3 && $2 == "T" { print $3 }' | sort -u; }

shopt -s nullglob
low=( "$build"/lib/registry/*.o "$build"/lib/storage/*.o )
front=()
for o in "$build"/app/*.o; do
	case ${o##*/} in
	cmd_*.o | bindery_cli.o | cli.o) ;;
	*) front+=( "$o" ) ;;
	esac
done
# No objects is a broken build, not a pass.
ok '[ ${#low[@]} -ge 8 ]' "the objects of lib/registry and lib/storage are built in $build (${#low[@]})"
ok '[ ${#front[@]} -ge 10 ]' "the front end's objects are built in $build (${#front[@]})"
lowsyms=$(defined "${low[@]}")
like "$lowsyms" '^docs_get$' "docs_get is among the registry's functions (the check reads the right symbols)"

# The checker itself, on the CLI: it does call the registry, and must be seen to.
cli=$(nm -u "$build"/app/cmd_sweep.o 2>/dev/null | awk '{ print $2 }' | sort -u | comm -12 - <(printf '%s\n' "$lowsyms"))
isnt "$cli" "" "the check sees the CLI's own calls into the registry (cmd_sweep.o)"

bad=""
for o in "${front[@]}"; do
	calls=$(nm -u "$o" | awk '{ print $2 }' | sort -u | comm -12 - <(printf '%s\n' "$lowsyms") | tr '\n' ' ')
	[ -z "$calls" ] || bad="$bad ${o##*/}: ${calls% }"
done
is "${bad# }" "" "no front-end object calls lib/registry or lib/storage"
done_testing
