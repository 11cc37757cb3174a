#!/usr/bin/env bash
# The layers of lib/ (HACKING.md "Layers"): every #include "x/..." in a
# layer's sources names that layer or one below it.
#
#   base      includes only base
#   parse     base, parse
#   storage   base, storage            (no database, no parser)
#   registry  base, registry           (no storage, no parser)
#   protocol  base, parse, storage, registry, protocol
#   app/      anything in lib/; nothing in lib/ includes app/
#
# Prints one TAP line per layer, naming every include that breaks the rule.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
cd "$top" || bail_out "cannot cd to $top"

declare -A allowed=(
	[base]="base"
	[parse]="base parse"
	[storage]="base storage"
	[registry]="base registry"
	[protocol]="base parse storage registry protocol"
)

total=0
for layer in base parse storage registry protocol; do
	[ -d "lib/$layer" ] || { ok 0 "lib/$layer exists"; continue; }
	bad=""
	while IFS= read -r hit; do
		[ -n "$hit" ] || continue
		total=$((total + 1))
		file=${hit%%:*}
		target=${hit#*#include \"}
		target=${target%%\"*}
		case $target in
		*/*) dep=${target%%/*} ;;
		*) bad="$bad $file:$target(no layer named)"; continue ;;
		esac
		case " ${allowed[$layer]} " in
		*" $dep "*) ;;
		*) bad="$bad $file:$target" ;;
		esac
	done < <(grep -H '^#include "' lib/"$layer"/*.[ch] | grep -v '"autoconfig.h"')
	is "${bad# }" "" "lib/$layer includes only: ${allowed[$layer]}"
done
ok '[ "$total" -gt 50 ]' "found the includes ($total)"
# The library never reaches the front end.
is "$(grep -rl '#include "\(app/\|\.\./\)' lib | tr '\n' ' ')" "" "nothing in lib/ includes app/ or ../"
done_testing
