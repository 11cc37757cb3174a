#!/usr/bin/env bash
# cycles.sh - no two modules of lib/ or app/ depend on each other in a loop,
# through their includes or through their calls (HACKING.md "Layers").
# layers.sh holds each layer to the layers below it; a loop inside one
# layer escapes it, and two modules in a loop can be neither read, tested
# nor moved one without the other.
#
# A module is a source and its header: lib/registry/docs_db stands for
# docs_db.c and docs_db.h, a header alone is a module of its own, and a
# module's internal header (X_internal.h, the declarations its sibling
# files share but the layer above may not see) is part of module X.
#   includes  "x/y.h" is lib/x/y.h (else x/y.h from the top), a bare "y.h"
#             is the one beside the including file; includes that name no
#             file of lib/ or app/ (autoconfig.h, the generated page_js.h)
#             lead nowhere.
#   calls     A calls B when an object of A needs a symbol (nm: U) that an
#             object of B defines.  An object is mapped back to its source
#             by its name, with automake's per-program prefix dropped
#             (app/bindery_fcgi-handlers.o is app/handlers); every program's
#             objects of app/ count as app/'s modules.
# Each loop is a strongly connected component of more than one module; a
# failure names its modules, then every edge inside it with the includes
# or the symbols that make it.
#
# The objects are the build's: BUILD_DIR, else make check's top_builddir
# (or abs_top_builddir, or the current directory when it is a build), else
# var/build.  Without them, or with one older than its source, the call
# check fails rather than skips: a loop it cannot see is not an absent one.
# The first checks run the same code on planted loops, so each check is
# seen to find one.
[ -n "${BASH_VERSION:-}" ] || exec bash "$0" "$@"
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../lib/tap.sh"
top=${top_srcdir:-$(cd "$here/../.." && pwd)}
start=$PWD
cd "$top" || bail_out "cannot cd to $top"
top=$PWD
export LC_ALL=C

# The modules' files under ROOT: one path a line, relative to ROOT.
sources() { # ROOT
	(cd "$1" && find lib app -type f \( -name '*.c' -o -name '*.h' \) 2>/dev/null | sort)
}

# "FROM TO EVIDENCE" for each include of a file under ROOT that names a
# file of another module.
include_edges() { # ROOT
	local files
	files=$(sources "$1")
	[ -n "$files" ] || return 0
	# shellcheck disable=SC2086 # one word a path: the sources have no spaces
	(cd "$1" && awk -v list="$files" '
		function module(p) { sub(/\.[ch]$/, "", p); sub(/_internal$/, "", p); return p }
		BEGIN { n = split(list, f, "\n"); for (i = 1; i <= n; i++) known[f[i]] = 1 }
		/^[ \t]*#[ \t]*include[ \t]*"/ {
			t = $0
			sub(/^[^"]*"/, "", t)
			sub(/".*$/, "", t)
			if (t ~ /\//) {
				p = "lib/" t
				if (!(p in known))
					p = t
			} else {
				p = FILENAME
				sub(/[^\/]*$/, "", p)
				p = p t
			}
			if (!(p in known))
				next
			from = module(FILENAME)
			to = module(p)
			if (from != to)
				print from, to, FILENAME " includes " t
		}' $files)
}

# "FROM TO SYMBOL" from `nm -A -g -P` lines of objects (paths relative to
# a build's top) on stdin; SRCS lists the sources the objects are built
# from.  An object no source matches (left over from a deleted one) counts
# for nothing.
call_edges() { # SRCS
	awk -v list="$1" '
		function module(obj,   dir, base, rest) {
			if (obj in mod)
				return mod[obj]
			dir = obj
			sub(/[^\/]*$/, "", dir)
			base = substr(obj, length(dir) + 1)
			sub(/\.o$/, "", base)
			rest = base
			sub(/^[^-]*-/, "", rest)
			if ((dir base ".c") in known)
				mod[obj] = dir base
			else if (rest != base && (dir rest ".c") in known)
				mod[obj] = dir rest
			else
				mod[obj] = ""
			return mod[obj]
		}
		BEGIN { n = split(list, f, "\n"); for (i = 1; i <= n; i++) known[f[i]] = 1 }
		{
			obj = $1
			sub(/:$/, "", obj)
			m = module(obj)
			if (m == "")
				next
			if ($3 == "U")
				need[m, $2] = 1
			else if ($3 ~ /^[TDBRCGSVW]$/)
				defs[$2] = defs[$2] " " m
		}
		END {
			for (k in need) {
				split(k, mk, SUBSEP)
				c = split(defs[mk[2]], by, " ")
				for (i = 1; i <= c; i++)
					if (by[i] != mk[1] && !seen[mk[1], by[i], mk[2]]++)
						print mk[1], by[i], mk[2]
			}
		}' | sort
}

# The loops of the graph whose "FROM TO EVIDENCE" lines come on stdin: a
# line "loop M1 M2 ..." per strongly connected component of more than one
# module (Tarjan's), then "edge A -> B: EVIDENCE..." for each edge inside it.
loops() {
	sort | awk '
		function visit(v,   i, w, members, cnt, s, j, t) {
			order[v] = low[v] = ++counter
			stack[++sp] = v
			on[v] = 1
			for (i = 1; i <= deg[v]; i++) {
				w = adj[v, i]
				if (!(w in order)) {
					visit(w)
					if (low[w] < low[v])
						low[v] = low[w]
				} else if (on[w] && order[w] < low[v])
					low[v] = order[w]
			}
			if (low[v] != order[v])
				return
			cnt = 0
			do {
				w = stack[sp--]
				on[w] = 0
				members[++cnt] = w
			} while (w != v)
			if (cnt < 2)
				return
			for (i = 2; i <= cnt; i++)
				for (j = i; j > 1 && members[j - 1] > members[j]; j--) {
					t = members[j]; members[j] = members[j - 1]; members[j - 1] = t
				}
			s = "loop"
			nloops++
			for (i = 1; i <= cnt; i++) {
				s = s " " members[i]
				comp[members[i]] = nloops
			}
			loopline[nloops] = s
		}
		{
			key = $1 SUBSEP $2
			ev = $0
			sub(/^[^ ]* [^ ]* /, "", ev)
			if (!(key in why)) {
				adj[$1, ++deg[$1]] = $2
				edges[++nedges] = key
				why[key] = ev
			} else
				why[key] = why[key] ", " ev
			if (!($1 in node)) { node[$1] = 1; nodes[++nnodes] = $1 }
			if (!($2 in node)) { node[$2] = 1; nodes[++nnodes] = $2 }
		}
		END {
			for (i = 1; i <= nnodes; i++)
				if (!(nodes[i] in order))
					visit(nodes[i])
			for (l = 1; l <= nloops; l++) {
				print loopline[l]
				for (i = 1; i <= nedges; i++) {
					split(edges[i], e, SUBSEP)
					if (comp[e[1]] == l && comp[e[2]] == l)
						print "edge " e[1] " -> " e[2] ": " why[edges[i]]
				}
			}
		}'
}

# One TAP line: no loop in what loops printed, else each named in diag lines.
no_loops() { # LOOPS DESC
	if [ -z "$1" ]; then
		pass "$2"
		return
	fi
	fail "$2"
	local line
	while IFS= read -r line; do
		case $line in
		loop*) diag "${line}" ;;
		*) diag "  ${line#edge }" ;;
		esac
	done <<<"$1"
}

scratch=$(mktemp -d) || bail_out "mktemp -d failed"
trap 'rm -rf "$scratch"' EXIT

# --- The checker on planted loops -----------------------------------------
# a -> b -> c -> a and e <-> f are loops; d only points into one and g at
# itself (one module, no loop).
got=$(loops <<'EOF' | grep '^loop'
a b why-ab
b c why-bc
c a why-ca
d a why-da
e f why-ef
f e why-fe
g g why-gg
EOF
)
is "$got" $'loop a b c\nloop e f' "the loop finder finds both planted loops and nothing else"

# A tree of three modules: lib/x/a includes lib/x/b by its layer path, b
# includes a by a bare name; app/m includes lib/x/a (one way) and its own
# header and a generated one (nowhere).
mkdir -p "$scratch/lib/x" "$scratch/app"
printf '#include "x/b.h"\n' >"$scratch/lib/x/a.c"
printf '#ifndef A_H\n#define A_H\n#endif\n' >"$scratch/lib/x/a.h"
printf '  #  include "a.h"\n' >"$scratch/lib/x/b.c"
: >"$scratch/lib/x/b.h"
printf '#include "x/a.h"\n#include "m.h"\n#include "app/gen.h"\n#include <stdio.h>\n' \
	>"$scratch/app/m.c"
: >"$scratch/app/m.h"
got=$(include_edges "$scratch" | loops)
is "$got" $'loop lib/x/a lib/x/b\nedge lib/x/a -> lib/x/b: lib/x/a.c includes x/b.h\nedge lib/x/b -> lib/x/a: lib/x/b.c includes a.h' \
	"the include check finds a planted loop, by layer path and by bare name"

# Objects of the same tree as nm lists them, one with a per-program prefix;
# a's call into b and b's into a are a loop, m's into a is not; the object
# of a deleted source counts for nothing.
got=$(call_edges "$(sources "$scratch")" <<'EOF' | loops
lib/x/libbindery_a-a.o: a_f T 0 10
lib/x/libbindery_a-a.o: b_g U
lib/x/b.o: b_g T 0 10
lib/x/b.o: a_f U
app/prog-m.o: a_f U
app/prog-m.o: main T 0 10
lib/x/gone.o: m_h T 0 10
lib/x/gone.o: a_f U
EOF
)
is "$got" $'loop lib/x/a lib/x/b\nedge lib/x/a -> lib/x/b: b_g\nedge lib/x/b -> lib/x/a: a_f' \
	"the call check finds a planted loop through nm's symbols"

# --- lib/ and app/ --------------------------------------------------------
edges=$(include_edges "$top")
n=$(grep -c . <<<"$edges")
ok '[ "$n" -gt 50 ]' "found the includes between modules ($n)"
no_loops "$(loops <<<"$edges")" "no two modules of lib/ and app/ include each other in a loop"

# The build's objects.
build=${BUILD_DIR:-${top_builddir:-${abs_top_builddir:-}}}
if [ -z "$build" ]; then
	build=$top/var/build
	[ -f "$start/config.status" ] && [ -d "$start/lib" ] && build=$start
fi
build=$(cd "$build" 2>/dev/null && pwd) || build=${BUILD_DIR:-${top_builddir:-$top/var/build}}
nm=${NM:-nm}
objs=$( (cd "$build" 2>/dev/null && find lib app -type f -name '*.o' 2>/dev/null) | sort)
srcs=$(sources "$top")
if ! command -v "$nm" >/dev/null 2>&1; then
	fail "nm ($nm) is there to read the objects"
	fail "no two modules of lib/ and app/ call each other in a loop (not checked: no nm)"
	done_testing
fi
if [ -z "$objs" ]; then
	fail "the objects of lib/ and app/ are built in $build (none found: build first, ./dev build)"
	fail "no two modules of lib/ and app/ call each other in a loop (not checked: no objects)"
	done_testing
fi

# Every source has an object, none older than it: a call graph read from
# an old build would pass or fail for the code as it was.
unbuilt="" stale=""
for src in $(grep '\.c$' <<<"$srcs"); do
	dir=${src%/*}
	base=${src##*/}
	base=${base%.c}
	found=0
	for obj in "$build/$dir/$base.o" "$build/$dir/"*"-$base.o"; do
		[ -f "$obj" ] || continue
		found=1
		[ "$top/$src" -nt "$obj" ] && stale="$stale ${obj#"$build"/}"
	done
	[ "$found" = 1 ] || unbuilt="$unbuilt $src"
done
is "${unbuilt# }" "" "every source of lib/ and app/ has its object in $build (else build first: ./dev build)"
is "${stale# }" "" "no object in $build is older than its source (else build again)"

# shellcheck disable=SC2086 # one word an object: the paths have no spaces
edges=$( (cd "$build" && "$nm" -A -g -P $objs) | call_edges "$srcs")
n=$(grep -c . <<<"$edges")
ok '[ "$n" -gt 100 ]' "found the calls between modules ($n)"
no_loops "$(loops <<<"$edges")" "no two modules of lib/ and app/ call each other in a loop"
done_testing
