# tests/bench/bench_results.jq: bench.sh's raw.tsv (FIGURE SERVER SIDE ROUND
# VALUE, one a line) into results.json: the machine, the parameters, one
# row per figure and server (medians, ratios, target, met) and the raw numbers.
# Ratios are speeds: bindery / baseline (for milliseconds, baseline / bindery).
def med: sort | if length == 0 then null
	elif length % 2 == 1 then .[(length - 1) / 2]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def ratio($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;
def atleast($r; $min): if $r == null then null else $r >= $min end;

(split("\n") | map(select(length > 0) | split("\t")
	| {figure: .[0], server: .[1], side: .[2], round: (.[3] | tonumber), value: (.[4] | tonumber)}))
as $raw
| def vals($f; $s; $side): [$raw[] | select(.figure == $f and .server == $s and .side == $side) | .value];
  def m($f; $s; $side): vals($f; $s; $side) | med;
  def speed_row($fig; $what; $key; $s; $tp; $td):
	(m($key; $s; "bindery")) as $b | (m($key; $s; "direct")) as $d | (m($key; $s; "proxied")) as $p
	| {figure: $fig, what: $what, server: $s, unit: "MiB/s", bindery: $b, direct: $d, proxied: $p,
	   ratio_direct: ratio($b; $d), ratio_proxied: ratio($b; $p),
	   target: "≥ \($tp)× proxied, ≥ \($td)× direct",
	   met: (atleast(ratio($b; $p); $tp) as $x | atleast(ratio($b; $d); $td) as $y
		| if $x == null or $y == null then null else $x and $y end)};
  (($params.block_size * $params.blocks_in_flight + 2097152) / 1024) as $p3lim
| {machine: $machine, params: $params,
   figures: [
	(["lighttpd", "apache"][] as $s |
	speed_row("P1"; "create of \($params.mib) MiB, raw body"; "p1_mibs"; $s; 0.9; 0.8),
	((m("p2_rate"; $s; "bindery")) as $b | (m("p2_rate"; $s; "direct")) as $d | (m("p2_rate"; $s; "proxied")) as $p
	| {figure: "P2", what: "1 KiB creates, \($params.p2_clients) keep-alive clients", server: $s, unit: "/s",
	   bindery: $b, direct: $d, proxied: $p, ratio_direct: ratio($b; $d), ratio_proxied: ratio($b; $p),
	   p50_ms: {bindery: m("p2_p50_ms"; $s; "bindery"), direct: m("p2_p50_ms"; $s; "direct"),
		proxied: m("p2_p50_ms"; $s; "proxied")},
	   p99_ms: {bindery: m("p2_p99_ms"; $s; "bindery"), direct: m("p2_p99_ms"; $s; "direct"),
		proxied: m("p2_p99_ms"; $s; "proxied")},
	   target: "≥ 0.45× proxied", met: atleast(ratio($b; $p); 0.45)}),
	# What each side's P2 request cost in CPU, by part; the ratios are
	# baseline over bindery: the most P2's ratio can be once the load
	# saturates the cores.
	(["storage", "database", "web", "responders"] as $parts
	| ($parts | map({key: ., value: {bindery: m("p2_cpu_\(.)_ms"; $s; "bindery"),
		direct: m("p2_cpu_\(.)_ms"; $s; "direct"), proxied: m("p2_cpu_\(.)_ms"; $s; "proxied")}})
	   | from_entries) as $by
	| ([$by[].bindery] | add) as $b | ([$by[].direct] | add) as $d | ([$by[].proxied] | add) as $p
	| {figure: "P2-cpu", what: "CPU ms per P2 request: storage, database, web server, responders", server: $s,
	   unit: "CPU ms", bindery: $b, direct: $d, proxied: $p, parts: $by,
	   ratio_direct: ratio($d; $b), ratio_proxied: ratio($p; $b),
	   target: "report: P2's ceiling when CPU-bound", met: null}),
	speed_row("P5"; "download of \($params.mib) MiB (proxy mode)"; "p5_mibs"; $s; 0.9; 0.8),
	((vals("p3_rss_kib"; $s; "bindery") | max) as $b
	| {figure: "P3", what: "responder peak RssAnon during P1 (max of rounds)", server: $s, unit: "KiB",
	   bindery: $b, limit_kib: $p3lim,
	   target: "≤ 2 MiB + block_size × blocks_in_flight = \($p3lim) KiB",
	   met: (if $b == null then null else $b <= $p3lim end)}),
	(select($params.big) | (m("p3_64m_kib"; $s; "bindery")) as $a | (m("p3_1024m_kib"; $s; "bindery")) as $b
	| {figure: "P3-size", what: "peak RssAnon, 1 GiB create against 64 MiB create", server: $s, unit: "KiB",
	   bindery: $b, small_kib: $a, ratio_small: ratio($b; $a), limit_kib: $p3lim,
	   target: "1 GiB peak within 1 % of the 64 MiB one",
	   met: (if $a == null or $b == null then null else ($b <= $a * 1.01) and ($b >= $a * 0.99) end)}),
	((m("tus_mibs"; $s; "bindery")) as $b | (m("tus_mibs"; $s; "create")) as $c
	| {figure: "tus", what: "\($params.mib) MiB in \($params.tus_chunk_mib) MiB PATCHes", server: $s,
	   unit: "MiB/s", bindery: $b, create: $c, direct: m("p1_mibs"; $s; "direct"),
	   proxied: m("p1_mibs"; $s; "proxied"), ratio_create: ratio($b; $c),
	   ratio_direct: ratio($b; m("p1_mibs"; $s; "direct")), ratio_proxied: ratio($b; m("p1_mibs"; $s; "proxied")),
	   target: "≥ 0.8× bindery's create beside it", met: atleast(ratio($b; $c); 0.8)}),
	((m("finalize_ms"; $s; "bindery")) as $b | (m("finalize_ms"; $s; "direct")) as $d
	| {figure: "finalize", what: "direct upload's finalize of \($params.mib) MiB (baseline: GET of the blob)",
	   server: $s, unit: "ms", bindery: $b, direct: $d, ratio_direct: ratio($d; $b),
	   target: "report", met: null})
	)],
   raw: $raw}
