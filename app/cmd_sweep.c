/*
 * cmd_sweep.c - `bindery sweep`, the cron job: stale intents, the deletion
 * outbox, staged blocks.  Silent when all is well (cron mails any output).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "base/counters.h"
#include "base/log.h"
#include "base/rand.h"
#include "protocol/sweep.h"
#include "registry/sweep_db.h"

static void
sweep_usage(FILE *fp)
{
	fprintf(fp,
		"usage: bindery sweep [--older-than SECONDS] [--force] [--dry-run]\n"
		"                     [--lock NAME] [--batch N] [--parallel N] [--prefix P]\n\n"
		"Resolves upload intents whose lease has expired (a live upload renews it to\n"
		"now + [limits] sweep_cutoff as its bytes arrive; --older-than N also takes\n"
		"intents not renewed for N seconds), drains the deletion outbox, purges staged blocks and forgets finished\n"
		"idempotency keys older than [limits] idempotency_ttl.  --older-than shorter\n"
		"than 2 x (heartbeat + request_deadline + body_idle_timeout) + 5 s is refused\n"
		"unless --force.\n"
		"--lock NAME takes the lock row NAME (table sweep_locks) for [sweep] lease\n"
		"seconds, on every host and Galera node alike; while another run's lease on\n"
		"it lasts, exit 75 quietly.  --prefix P sweeps only blob names starting\n"
		"with the configured prefix + P.  Silent on success unless -v.  See bindery(8).\n");
}

/* What the command line asked for. */
struct sweep_args {
	unsigned older, batch, parallel;	/* 0: from the configuration */
	int have_older, force, dry_run;
	const char *lock;			/* NULL: no lock */
	const char *narrow;			/* --prefix, "" for all */
};

/* A stage that lets the command go on returns this; any other value is the exit status. */
#define SWEEP_GO (-1)

/* Global -c/-v go before the subcommand; -v is also accepted after it. */
static int
sweep_parse_args(struct cli *cli, int argc, char **argv, struct sweep_args *a)
{
	static const struct option opts[] = {
		{ "older-than", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "lock", required_argument, NULL, 'l' },
		{ "batch", required_argument, NULL, 'b' },
		{ "parallel", required_argument, NULL, 'p' },
		{ "prefix", required_argument, NULL, 'P' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	memset(a, 0, sizeof *a);
	a->narrow = "";
	while ((c = getopt_long(argc, argv, "o:fnl:b:p:P:vh", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			if (cli_parse_unsigned(optarg, &a->older) != 0) {
				fprintf(stderr, "bindery sweep: --older-than wants seconds, not '%s'\n", optarg);
				return EXIT_USAGE;
			}
			a->have_older = 1;
			break;
		case 'f': a->force = 1; break;
		case 'n': a->dry_run = 1; break;
		case 'l': a->lock = optarg; break;
		case 'b':
		case 'p':
			if (cli_parse_unsigned(optarg, c == 'b' ? &a->batch : &a->parallel) != 0 ||
			    (c == 'b' ? a->batch : a->parallel) == 0 || (c == 'p' && a->parallel > 64)) {
				fprintf(stderr, "bindery sweep: bad --%s '%s'\n",
					c == 'b' ? "batch" : "parallel", optarg);
				return EXIT_USAGE;
			}
			break;
		case 'P': a->narrow = optarg; break;
		case 'v': cli->verbose = 1; break;
		case 'h': sweep_usage(stdout); return 0;
		default: sweep_usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "bindery sweep: unexpected argument '%s'\n", argv[optind]);
		sweep_usage(stderr);
		return EXIT_USAGE;
	}
	if (a->lock && (strlen(a->lock) == 0 || strlen(a->lock) > 64)) {
		fprintf(stderr, "bindery sweep: --lock NAME must be 1 to 64 characters\n");
		return EXIT_USAGE;
	}
	return SWEEP_GO;
}

/* The run's options from the arguments and the configuration; prefix holds so.prefix. */
static int
sweep_settle_opts(struct cli *cli, const struct sweep_args *a, struct sweep_opts *so, char *prefix,
		  size_t prefixlen)
{
	memset(so, 0, sizeof *so);
	so->dry_run = a->dry_run;
	so->cutoff = a->have_older ? (int64_t)a->older : -1;
	/* A live request may still be writing an intent: the same relation as
	 * the configuration's own sweep_cutoff keeps the sweeper clear of it. */
	if (a->have_older && a->older < config_sweep_cutoff_min(cli->cfg) && !a->force) {
		fprintf(stderr,
			"bindery sweep: a cutoff of %us is shorter than twice the responder's heartbeat,"
			" request deadline and body idle timeout plus compensation (%llus): a live upload"
			" could be swept.  Use --force to do it anyway.\n",
			a->older, (unsigned long long)config_sweep_cutoff_min(cli->cfg));
		return EXIT_CONFIG;
	}
	/* Without --prefix every registry row is swept, even one written under
	 * an earlier configured prefix; --prefix narrows inside the current one. */
	if ((size_t)snprintf(prefix, prefixlen, "%s%s", a->narrow[0] ? cli->cfg->storage_prefix : "",
			     a->narrow) >= prefixlen) {
		fprintf(stderr, "bindery sweep: --prefix too long\n");
		return EXIT_USAGE;
	}
	so->prefix = prefix;
	so->batch = a->batch ? a->batch : cli->cfg->sweep_batch;
	so->parallel = a->parallel ? a->parallel : cli->cfg->sweep_parallel;
	so->plan = stdout;
	return SWEEP_GO;
}

/* Take the lock row for this run as holder (filled in here). */
static int
sweep_take_lock(struct cli *cli, const char *lock, char *holder, size_t holderlen)
{
	enum db_err e;
	int got = 0;

	if (rand_hex(holder, holderlen, 16) != 0) {
		fprintf(stderr, "bindery sweep: no randomness for the lock's holder id\n");
		return EXIT_SOFTWARE;
	}
	e = sweep_db_lock(cli->svc->db, lock, holder, cli->cfg->sweep_lease, &got);
	if (e != DB_OK)
		return cli_db_failed(cli, "bindery sweep", e, EXIT_TEMPFAIL);
	if (!got) {
		/* The previous run is still at work; the next tick tries again. */
		log_info("lock %s is held by another run; not sweeping", lock);
		if (cli->verbose)
			printf("sweep: lock %s held by another run; skipped\n", lock);
		return EXIT_TEMPFAIL;
	}
	return SWEEP_GO;
}

/* Cron mails whatever is printed: say something only when asked to, or
 * when something needs a human or a later run.  Returns the exit status. */
static int
sweep_report_out(const struct cli *cli, const struct sweep_opts *so, const struct sweep_report *rep,
		 double seconds)
{
	if (cli->verbose || so->dry_run || rep->problems || rep->unavailable || rep->temporary)
		printf("sweep%s: %llu dropped, %llu deleted, %llu purged, %llu rolled forward,"
		       " %llu rolled back, %llu outbox, %llu taken over, %llu keys expired,"
		       " %llu strays, %llu problems, %llu deferred in %.3fs\n",
		       so->dry_run ? " (dry run, nothing changed)" : "",
		       (unsigned long long)rep->dropped, (unsigned long long)rep->deleted,
		       (unsigned long long)rep->purged, (unsigned long long)rep->rolled_forward,
		       (unsigned long long)rep->rolled_back, (unsigned long long)rep->outbox,
		       (unsigned long long)rep->taken_over, (unsigned long long)rep->keys_expired,
		       (unsigned long long)rep->strays, (unsigned long long)rep->problems,
		       (unsigned long long)rep->deferred, seconds);
	if ((cli->verbose || so->dry_run) && cli->svc->events != NULL)
		printf("events: %llu delivered, %llu retried, %llu dead, %llu pruned\n",
		       (unsigned long long)rep->events_delivered, (unsigned long long)rep->events_retried,
		       (unsigned long long)rep->events_dead, (unsigned long long)rep->events_pruned);
	/* The summary says how many; stderr says why (the first cause). */
	if (rep->refused || rep->unavailable || rep->temporary)
		fprintf(stderr, "bindery sweep: work left for a later run: %s\n",
			rep->cause[0] ? rep->cause : "see the log");
	if (rep->refused)
		return EXIT_NOPERM;
	if (rep->unavailable)
		return EXIT_UNAVAILABLE;
	if (rep->temporary)
		return EXIT_TEMPFAIL;
	return rep->problems ? EXIT_PROBLEMS : 0;
}

/*
 * The run's row in sweep_runs (sql/012), so `bindery status`, /healthz and
 * /metrics can see a sweeper that stopped.  The record is for watching,
 * not for correctness: a run that cannot write it (a schema not yet
 * migrated, a database gone) still sweeps, and says so in the log.
 * Returns the row's id, 0 when there is none.
 */
static uint64_t
sweep_record_begin(struct cli *cli, const char *lock, const char *holder)
{
	char host[256];
	uint64_t id = 0;
	enum db_err e;

	if (gethostname(host, sizeof host) != 0)
		host[0] = '\0';
	host[sizeof host - 1] = '\0';
	e = sweep_db_run_begin(cli->svc->db, host, (unsigned)getpid(), lock, lock ? holder : NULL, &id);
	if (e != DB_OK) {
		log_warn("sweep: this run is not recorded (sweep_runs: %s); has `bindery migrate` run?",
			 db_err_name(e));
		return 0;
	}
	return id;
}

/* How the run ended, for its row: ok unless it was cut short, left work
 * behind, or swept only a slice (--prefix): the sweeper is healthy only
 * while full runs happen. */
static enum sweep_result
sweep_result_of(enum sweep_err se, const struct sweep_report *rep, int narrowed)
{
	if (se != SWEEP_OK)
		return SWEEP_RESULT_FAILED;
	if (narrowed || rep->unavailable || rep->temporary || rep->deferred > 0)
		return SWEEP_RESULT_PARTIAL;
	return SWEEP_RESULT_OK;
}

/* Complete the run's row id, then keep the history to [sweep] history_days. */
static void
sweep_record_end(struct cli *cli, uint64_t id, enum sweep_result result, const struct sweep_report *rep)
{
	struct sweep_run_counts c;
	uint64_t pruned = 0;
	enum db_err e;

	if (id == 0)
		return;
	memset(&c, 0, sizeof c);
	c.dropped = rep->dropped;
	c.deleted = rep->deleted;
	c.purged = rep->purged;
	c.rolled_forward = rep->rolled_forward;
	c.rolled_back = rep->rolled_back;
	c.outbox = rep->outbox;
	c.taken_over = rep->taken_over;
	c.keys_expired = rep->keys_expired;
	c.problems = rep->problems;
	c.deferred = rep->deferred;
	c.lease_expired = rep->lease_expired;
	if ((e = sweep_db_run_finish(cli->svc->db, id, result, &c)) != DB_OK) {
		log_warn("sweep: run %llu's result not recorded: %s", (unsigned long long)id, db_err_name(e));
		return;
	}
	if ((e = sweep_db_run_prune(cli->svc->db, cli->cfg->sweep_history_days, &pruned)) != DB_OK)
		log_warn("sweep: old runs not pruned: %s", db_err_name(e));
	else if (pruned > 0)
		log_info("sweep: forgot %llu runs older than %u days", (unsigned long long)pruned,
			 cli->cfg->sweep_history_days);
}

/*
 * The run's actions into the counters every responder on this host shares
 * (lib/base/counters.h), so /metrics counts the sweeper too: a separate
 * process, but one more adder to the same file.  Storage and database
 * errors met during the run count there as well.  Only with [metrics]
 * enabled; a file that cannot be had is logged and the sweep goes on.
 */
static void
sweep_counters_open(const struct cli *cli)
{
	char err[512];

	if (cli->cfg->metrics_enabled &&
	    counters_open(cli->cfg->metrics_counters_file, err, sizeof err) != COUNTERS_OK)
		log_warn("sweep: not counted in /metrics: %s", err);
}

static void
sweep_counters_add(const struct sweep_report *rep)
{
	counters_add(COUNTER_SWEEP_RUNS, 1);
	counters_add(COUNTER_SWEEP_DROPPED, rep->dropped);
	counters_add(COUNTER_SWEEP_DELETED, rep->deleted);
	counters_add(COUNTER_SWEEP_PURGED, rep->purged);
	counters_add(COUNTER_SWEEP_ROLLED_FORWARD, rep->rolled_forward);
	counters_add(COUNTER_SWEEP_ROLLED_BACK, rep->rolled_back);
	counters_add(COUNTER_SWEEP_OUTBOX, rep->outbox);
	counters_add(COUNTER_SWEEP_TAKEN_OVER, rep->taken_over);
	counters_add(COUNTER_SWEEP_KEYS_EXPIRED, rep->keys_expired);
	counters_add(COUNTER_SWEEP_STRAYS, rep->strays);
	counters_add(COUNTER_SWEEP_PROBLEMS, rep->problems);
	counters_add(COUNTER_SWEEP_DEFERRED, rep->deferred);
}

int
cmd_sweep(struct cli *cli, int argc, char **argv)
{
	struct sweep_args a;
	struct sweep_opts so;
	struct sweep_report rep;
	struct timespec t0, t1;
	char prefix[512], holder[33] = "";
	enum sweep_err se;
	uint64_t run_id = 0;
	int rc;

	if ((rc = sweep_parse_args(cli, argc, argv, &a)) != SWEEP_GO)
		return rc;
	if ((rc = cli_services(cli)) != 0)
		return rc;
	if ((rc = sweep_settle_opts(cli, &a, &so, prefix, sizeof prefix)) != SWEEP_GO)
		return rc;
	if (a.lock && (rc = sweep_take_lock(cli, a.lock, holder, sizeof holder)) != SWEEP_GO)
		return rc;
	/* A dry run changes nothing, its record included. */
	if (!so.dry_run) {
		run_id = sweep_record_begin(cli, a.lock, holder);
		sweep_counters_open(cli);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	se = sweep_run(cli->svc, &so, &rep);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sweep_record_end(cli, run_id, sweep_result_of(se, &rep, a.narrow[0] != '\0'), &rep);
	if (!so.dry_run && se == SWEEP_OK)
		sweep_counters_add(&rep);
	counters_close();
	if (a.lock && sweep_db_unlock(cli->svc->db, a.lock, holder) != DB_OK)
		log_warn("lock %s not released; it lets go when its lease ends", a.lock);
	if (se != SWEEP_OK) {
		fprintf(stderr, "bindery sweep: could not start: %s\n",
			rep.cause[0] ? rep.cause : se == SWEEP_UNAVAILABLE ? "database unavailable" : "see the log");
		return rep.refused ? EXIT_NOPERM : se == SWEEP_UNAVAILABLE ? EXIT_UNAVAILABLE : EXIT_SOFTWARE;
	}
	return sweep_report_out(cli, &so, &rep,
				(double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
}
