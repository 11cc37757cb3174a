/*
 * cmd_events.c - `bindery events`: the events outbox ([events]) for an
 * operator: how many deliveries wait, were given up or are stopped; the
 * dead ones listed; dead ones re-queued; a receiver that answered 410
 * resumed.
 */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>

#include "cli.h"
#include "protocol/events.h"
#include "registry/events_db.h"

static int
print_dead(void *ctx, const struct events_dead *d)
{
	int as_json = *(int *)ctx;

	if (as_json) {
		json_t *j = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:s, s:s, s:s}", "webhook_id", d->webhook_id,
				      "type", d->type, "document_id", (json_int_t)d->document_id, "seq",
				      (json_int_t)d->seq, "attempts", (json_int_t)d->attempts, "last_status",
				      (json_int_t)d->last_status, "receiver", d->endpoint, "last_error",
				      d->last_error, "created_at", d->created_at);

		if (j == NULL || json_dumpf(j, stdout, JSON_COMPACT) != 0) {
			json_decref(j);
			return 1;
		}
		json_decref(j);
		putchar('\n');
	} else {
		printf("dead %s %s document %llu seq %llu at %s: %llu attempts, last %lld %s (receiver %.12s)\n",
		       d->webhook_id, d->type, (unsigned long long)d->document_id, (unsigned long long)d->seq,
		       d->created_at, (unsigned long long)d->attempts, (long long)d->last_status, d->last_error,
		       d->endpoint);
	}
	return 0;
}

int
cmd_events(struct cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "dead", no_argument, NULL, 'd' },
		{ "requeue", no_argument, NULL, 'r' },
		{ "resume", required_argument, NULL, 'R' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char synopsis[] = "usage: bindery events [--json] [--dead | --requeue | --resume URL]";
	struct events_counts n;
	const char *resume = NULL;
	char id[65];
	uint64_t changed = 0;
	int as_json = 0, dead = 0, requeue = 0, c, rc;
	enum db_err e;

	while ((c = getopt_long(argc, argv, "jdrR:h", opts, NULL)) != -1) {
		switch (c) {
		case 'j': as_json = 1; break;
		case 'd': dead = 1; break;
		case 'r': requeue = 1; break;
		case 'R': resume = optarg; break;
		case 'h':
			printf("%s\n\n"
			       "Without an option: the deliveries of [events] pending, delivered and dead,\n"
			       "and the receivers stopped (they answered 410).  --dead lists the dead ones\n"
			       "(given up past their receiver's max_age); --requeue sends them again (due\n"
			       "now, at the next sweep or change); --resume URL starts sending to a stopped\n"
			       "receiver again.  Exit 0, 1 when deliveries are dead or a receiver is\n"
			       "stopped (without an option), 69 the database is unavailable.  See bindery(8).\n",
			       synopsis);
			return 0;
		default:
			return cli_usage_error(synopsis, NULL);
		}
	}
	if (optind != argc || dead + requeue + (resume != NULL) > 1)
		return cli_usage_error(synopsis, "bindery events: at most one of --dead, --requeue, --resume");
	if ((rc = cli_services(cli)) != 0)
		return rc;
	if (dead) {
		e = events_db_list_dead(cli->svc->db, 1000, print_dead, &as_json);
		return e == DB_OK ? 0 : cli_db_failed(cli, "bindery events", e, EXIT_SOFTWARE);
	}
	if (requeue) {
		e = events_db_requeue_dead(cli->svc->db, NULL, &changed);
		if (e != DB_OK)
			return cli_db_failed(cli, "bindery events", e, EXIT_SOFTWARE);
		printf("requeued %llu dead deliveries\n", (unsigned long long)changed);
		return 0;
	}
	if (resume != NULL) {
		events_endpoint_id(resume, id);
		e = events_db_resume_endpoint(cli->svc->db, id, &changed);
		if (e != DB_OK)
			return cli_db_failed(cli, "bindery events", e, EXIT_SOFTWARE);
		printf("%s\n", changed ? "resumed" : "that receiver was not stopped");
		return changed ? 0 : EXIT_PROBLEMS;
	}
	if ((e = events_db_counts(cli->svc->db, &n)) != DB_OK)
		return cli_db_failed(cli, "bindery events", e, EXIT_SOFTWARE);
	if (as_json) {
		json_t *j = json_pack("{s:I, s:I, s:I, s:I}", "pending", (json_int_t)n.pending, "delivered",
				      (json_int_t)n.delivered, "dead", (json_int_t)n.dead, "stopped_receivers",
				      (json_int_t)n.stopped_endpoints);

		if (j == NULL || json_dumpf(j, stdout, JSON_COMPACT) != 0) {
			json_decref(j);
			return EXIT_SOFTWARE;
		}
		json_decref(j);
		putchar('\n');
	} else {
		printf("events: %llu pending, %llu delivered, %llu dead; %llu receivers stopped\n",
		       (unsigned long long)n.pending, (unsigned long long)n.delivered, (unsigned long long)n.dead,
		       (unsigned long long)n.stopped_endpoints);
	}
	return n.dead || n.stopped_endpoints ? EXIT_PROBLEMS : 0;
}
