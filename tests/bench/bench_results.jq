# tests/bench/bench_results.jq: bench.sh's raw.tsv (FIGURE SERVER SIDE ROUND
# VALUE, one a line) into results.json: the machine, the parameters, one
# row per figure and server (medians, ratios, target, met) and the raw numbers.
# Ratios are speeds: bindery / baseline (for milliseconds, baseline / bindery).
# Two of each: the ratio of the medians (ratio_*), and the median of each
# round's own ratio (paired_*), which decides "met".  The sides of a round run
# back to back, in alternating order; the machine's speed drifts between
# rounds by more than the targets' margins (2026-12-04, one run, lighttpd P1:
# every side 77-108 MiB/s in round 4, 144-173 in round 2), and a ratio of
# medians may pair one side's fast round with the other's slow one.
def med: sort | if length == 0 then null
	elif length % 2 == 1 then .[(length - 1) / 2]
	else (.[length / 2 - 1] + .[length / 2]) / 2 end;
def ratio($a; $b): if $a == null or $b == null or $b == 0 then null else $a / $b end;
def atleast($r; $min): if $r == null then null else $r >= $min end;
def both($x; $y): if $x == null or $y == null then null else $x and $y end;

(split("\n") | map(select(length > 0) | split("\t")
	| {figure: .[0], server: .[1], side: .[2], round: (.[3] | tonumber), value: (.[4] | tonumber)}))
as $raw
| def vals($f; $s; $side): [$raw[] | select(.figure == $f and .server == $s and .side == $side) | .value];
  def m($f; $s; $side): vals($f; $s; $side) | med;
  # The median over rounds of (figure $f, side $a) / (figure $f, side $b).
  def paired($f; $s; $a; $b):
	[$raw[] | select(.figure == $f and .server == $s and .side == $a)] as $xs
	| [$xs[] | . as $x | [$raw[] | select(.figure == $f and .server == $s and .side == $b
		and .round == $x.round)][0] as $y
	   | select($y != null) | ratio($x.value; $y.value) | select(. != null)] | med;
  # The median over rounds of server $s's bindery / server $t's, figure $f.
  def paired_servers($f; $s; $t):
	[$raw[] | select(.figure == $f and .server == $s and .side == "bindery")] as $xs
	| [$xs[] | . as $x | [$raw[] | select(.figure == $f and .server == $t and .side == "bindery"
		and .round == $x.round)][0] as $y
	   | select($y != null) | ratio($x.value; $y.value) | select(. != null)] | med;
  def speed_row($fig; $what; $key; $s; $tp; $td):
	(m($key; $s; "bindery")) as $b | (m($key; $s; "direct")) as $d | (m($key; $s; "proxied")) as $p
	| {figure: $fig, what: $what, server: $s, unit: "MiB/s", bindery: $b, direct: $d, proxied: $p,
	   ratio_direct: ratio($b; $d), ratio_proxied: ratio($b; $p),
	   paired_direct: paired($key; $s; "bindery"; "direct"), paired_proxied: paired($key; $s; "bindery"; "proxied"),
	   target: "≥ \($tp)× proxied, ≥ \($td)× direct"}
	| .met = both(atleast(.paired_proxied; $tp); atleast(.paired_direct; $td));
  (($params.block_size * $params.blocks_in_flight + 2097152) / 1024) as $p3lim
| {machine: $machine, params: $params,
   figures: [
	(["lighttpd", "apache", "pool"][] as $s |
	speed_row("P1"; "create of \($params.mib) MiB, raw body"; "p1_mibs"; $s; 0.9; 0.8),
	((m("p2_rate"; $s; "bindery")) as $b | (m("p2_rate"; $s; "direct")) as $d | (m("p2_rate"; $s; "proxied")) as $p
	| {figure: "P2", what: "1 KiB creates, \($params.p2_clients) keep-alive clients", server: $s, unit: "/s",
	   bindery: $b, direct: $d, proxied: $p, ratio_direct: ratio($b; $d), ratio_proxied: ratio($b; $p),
	   paired_direct: paired("p2_rate"; $s; "bindery"; "direct"),
	   paired_proxied: paired("p2_rate"; $s; "bindery"; "proxied"),
	   p50_ms: {bindery: m("p2_p50_ms"; $s; "bindery"), direct: m("p2_p50_ms"; $s; "direct"),
		proxied: m("p2_p50_ms"; $s; "proxied")},
	   p99_ms: {bindery: m("p2_p99_ms"; $s; "bindery"), direct: m("p2_p99_ms"; $s; "direct"),
		proxied: m("p2_p99_ms"; $s; "proxied")},
	   target: "≥ 0.45× proxied"} | .met = atleast(.paired_proxied; 0.45)),
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
	((m("p2_db_round_trips"; $s; "bindery")) as $b | (m("p2_db_statements"; $s; "bindery")) as $q
	| {figure: "P2-db", what: "database round trips per P2 create (statements the server ran per create)",
	   server: $s, unit: "round trips", bindery: $b, statements: $q,
	   target: "≤ 6 round trips", met: (if $b == null then null else $b <= 6 end)}),
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
	   paired_create: paired("tus_mibs"; $s; "bindery"; "create"),
	   ratio_direct: ratio($b; m("p1_mibs"; $s; "direct")), ratio_proxied: ratio($b; m("p1_mibs"; $s; "proxied")),
	   target: "≥ 0.8× bindery's create beside it"} | .met = atleast(.paired_create; 0.8)),
	((m("tus_mibs"; $s; "parallel")) as $b | (m("tus_mibs"; $s; "create")) as $c
	| {figure: "tus-parallel", what: "\($params.mib) MiB with tus-js-client, parallelUploads: 4", server: $s,
	   unit: "MiB/s", bindery: $b, create: $c, direct: m("p1_mibs"; $s; "direct"),
	   proxied: m("p1_mibs"; $s; "proxied"), ratio_create: ratio($b; $c),
	   paired_create: paired("tus_mibs"; $s; "parallel"; "create"),
	   ratio_direct: ratio($b; m("p1_mibs"; $s; "direct")), ratio_proxied: ratio($b; m("p1_mibs"; $s; "proxied")),
	   target: "≥ 1.0× bindery's create beside it"} | .met = atleast(.paired_create; 1.0)),
	((m("finalize_ms"; $s; "bindery")) as $b | (m("finalize_ms"; $s; "direct")) as $d
	| {figure: "finalize", what: "direct upload's finalize of \($params.mib) MiB (baseline: GET of the blob)",
	   server: $s, unit: "ms", bindery: $b, direct: $d, ratio_direct: ratio($d; $b),
	   target: "report", met: null})
	),
	# Apache with the pool against lighttpd, the fastest server, in the same
	# rounds: the "direct" column holds lighttpd's figure here.
	((["p1_mibs", "P1-pool"], ["p5_mibs", "P5-pool"])
	| . as [$key, $fig]
	| select((vals($key; "pool"; "bindery") | length) > 0)
	| (m($key; "pool"; "bindery")) as $b | (m($key; "lighttpd"; "bindery")) as $l
	| {figure: $fig, what: "Apache mod_proxy_fcgi + pool against lighttpd (direct column), same rounds",
	   server: "pool", unit: "MiB/s", bindery: $b, direct: $l, ratio_direct: ratio($b; $l),
	   paired_direct: paired_servers($key; "pool"; "lighttpd"),
	   target: "≥ 0.9× lighttpd"} | .met = atleast(.paired_direct; 0.9))
	],
   raw: $raw}
