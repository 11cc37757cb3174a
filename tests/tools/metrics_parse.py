#!/usr/bin/python3
"""metrics_parse.py FILE: read a Prometheus text exposition (0.0.4) with the
parser of Debian's python3-prometheus-client (someone else's reading of the
format, not ours) and print one line per sample:

    FAMILY TYPE HELP-PRESENT SAMPLE-NAME{LABELS} VALUE

(labels as k=v joined by commas, "-" when none).  Exit 1, with the parser's
complaint on stderr, when the text does not parse."""
import sys

from prometheus_client.parser import text_string_to_metric_families


def main():
    with open(sys.argv[1], encoding="utf-8") as f:
        text = f.read()
    try:
        families = list(text_string_to_metric_families(text))
    except Exception as e:  # the parser raises ValueError and friends
        print("parse error: %s" % e, file=sys.stderr)
        return 1
    for fam in families:
        for s in fam.samples:
            labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items())) or "-"
            print("%s %s %d %s{%s} %s" % (fam.name, fam.type, 1 if fam.documentation else 0,
                                          s.name, labels, repr(s.value)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
