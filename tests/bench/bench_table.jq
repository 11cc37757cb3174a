# tests/bench/bench_table.jq: results.json's figures as tab-separated lines
# (bench.sh aligns them with column -t).
def n: if . == null then "-" elif . >= 100 then (. | round | tostring)
	else ((. * 10 | round) / 10 | tostring) end;
# Two decimals, always: 0.4 prints as 0.40.
def r: if . == null then "-" else (. * 100 | round) as $c
	| "\($c / 100 | floor).\($c % 100 | tostring | if length == 1 then "0" + . else . end)×" end;
# A speed ratio: the rounds' own (paired, which decides "met"), then the
# ratio of the medians in brackets when there is a paired one.
def pr($paired; $ofmed): if $paired == null then ($ofmed | r) else "\($paired | r) (\($ofmed | r))" end;
def yn: if . == null then "-" elif . then "yes" else "NO" end;
(["figure", "server", "bindery", "direct", "proxied", "×direct", "×proxied", "target", "met"] | join("\t")),
(.figures[] |
	[.figure + " (" + .unit + ")", .server,
	 (.bindery | n) + (if .p50_ms then " p50 \(.p50_ms.bindery | n) p99 \(.p99_ms.bindery | n) ms" else "" end)
		+ (if .parts then " (storage \(.parts.storage.bindery | n), db \(.parts.database.bindery | n),"
			+ " web \(.parts.web.bindery | n), bindery \(.parts.responders.bindery | n))" else "" end)
		+ (if .figure == "P2-db" then " (\(.statements | n) statements)" else "" end),
	 (if .figure == "P3-size" then "64 MiB: \(.small_kib | n)" else (.direct | n) end)
		+ (if .p50_ms then " p50 \(.p50_ms.direct | n)" else "" end),
	 (.proxied | n) + (if .p50_ms then " p50 \(.p50_ms.proxied | n)" else "" end),
	 (if .figure == "P3-size" then "1G/64M \(.ratio_small | r)" else pr(.paired_direct; .ratio_direct) end),
	 pr(.paired_proxied; .ratio_proxied),
	 .target + (if .figure == "tus" or .figure == "tus-parallel" then " (\(.paired_create | r) of \(.create | n); medians \(.ratio_create | r))" else "" end),
	 (.met | yn)] | join("\t"))
