# tests/bench/bench_table.jq: results.json's figures as tab-separated lines
# (bench.sh aligns them with column -t).
def n: if . == null then "-" elif . >= 100 then (. | round | tostring)
	else ((. * 10 | round) / 10 | tostring) end;
# Two decimals, always: 0.4 prints as 0.40.
def r: if . == null then "-" else (. * 100 | round) as $c
	| "\($c / 100 | floor).\($c % 100 | tostring | if length == 1 then "0" + . else . end)×" end;
def yn: if . == null then "-" elif . then "yes" else "NO" end;
(["figure", "server", "bindery", "direct", "proxied", "×direct", "×proxied", "target", "met"] | join("\t")),
(.figures[] |
	[.figure + " (" + .unit + ")", .server,
	 (.bindery | n) + (if .p50_ms then " p50 \(.p50_ms.bindery | n) p99 \(.p99_ms.bindery | n) ms" else "" end)
		+ (if .parts then " (storage \(.parts.storage.bindery | n), db \(.parts.database.bindery | n),"
			+ " web \(.parts.web.bindery | n), bindery \(.parts.responders.bindery | n))" else "" end),
	 (if .figure == "P3-size" then "64 MiB: \(.small_kib | n)" else (.direct | n) end)
		+ (if .p50_ms then " p50 \(.p50_ms.direct | n)" else "" end),
	 (.proxied | n) + (if .p50_ms then " p50 \(.p50_ms.proxied | n)" else "" end),
	 (if .figure == "P3-size" then "1G/64M \(.ratio_small | r)" else (.ratio_direct | r) end),
	 (.ratio_proxied | r),
	 .target + (if .figure == "tus" then " (\(.ratio_create | r) of \(.create | n))" else "" end),
	 (.met | yn)] | join("\t"))
