/*
 * bench_sweep.c - the planting and baseline half of tests/bench/bench_sweep.sh.
 *
 *   bench_sweep plant-intents PREFIX N PAR   N stale create intents, blobs tagged pending
 *   bench_sweep plant-ready PREFIX N PAR     N ready documents on committed blobs
 *   bench_sweep raw-delete PREFIX N PAR      upload N blobs, then time deleting them
 *                                            with PAR clients: prints "raw_delete_per_s X"
 *   bench_sweep list PREFIX                  time List Blobs with tags to the end:
 *                                            prints "list_per_s X" and the count
 *   bench_sweep clean PREFIX                 drop rows and blobs under PREFIX
 *
 * Configuration from $BINDERY_CONFIG.  Each thread has its own blob client
 * (a client is not thread-safe); rows go in through one connection in
 * large transactions.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tools/sweep_plant.h"

static struct bindery_config *CFG;
static const char *PREFIX;
static long N;
static enum { UPLOAD_PENDING, UPLOAD_COMMITTED, DELETE_RAW, DELETE_BATCH } MODE;
static long next_index;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long failures;

static double
now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void
name_of(long i, char *out, size_t outlen)
{
	snprintf(out, outlen, "%s%07ld", PREFIX, i);
}

static void *
worker(void *arg)
{
	struct services *s = NULL;
	struct blob_result r;
	char name[256], err[256];
	long i;

	(void)arg;
	if (services_open(CFG, &s, err, sizeof err) != 0) {
		fprintf(stderr, "%s\n", err);
		return NULL;
	}
	for (;;) {
		pthread_mutex_lock(&mu);
		i = next_index++;
		pthread_mutex_unlock(&mu);
		if (i >= N)
			break;
		name_of(i, name, sizeof name);
		if (MODE == DELETE_BATCH) {
			enum { B = 100 };
			char names[B][256];
			const char *pn[B];
			struct blob_result each[B];
			long k, n;

			pthread_mutex_lock(&mu);
			next_index += B - 1;
			pthread_mutex_unlock(&mu);
			n = N - i < B ? N - i : B;
			for (k = 0; k < n; k++) {
				name_of(i + k, names[k], sizeof names[k]);
				pn[k] = names[k];
			}
			if (blob_batch_delete(s->blob, pn, (size_t)n, NULL, each, &r) != 0) {
				pthread_mutex_lock(&mu);
				failures += n;
				pthread_mutex_unlock(&mu);
			}
		} else if (MODE == DELETE_RAW) {
			if (blob_delete(s->blob, name, NULL, NULL, &r) != 0) {
				pthread_mutex_lock(&mu);
				failures++;
				pthread_mutex_unlock(&mu);
			}
		} else if (plant_blob(s->blob, name, "benchmark bytes",
				      MODE == UPLOAD_PENDING ? "pending" : "committed", NULL) != 0) {
			pthread_mutex_lock(&mu);
			failures++;
			pthread_mutex_unlock(&mu);
		}
	}
	services_free(s);
	return NULL;
}

/* Run the mode's storage calls over N names with par threads; seconds taken. */
static double
run_parallel(int mode, int par)
{
	pthread_t t[64];
	double t0;
	int k;

	MODE = mode;
	next_index = 0;
	failures = 0;
	if (par > 64)
		par = 64;
	/* Open one client in this thread first: library initialisation. */
	{
		struct services *s = NULL;
		char err[256];

		if (services_open(CFG, &s, err, sizeof err) == 0)
			services_free(s);
	}
	t0 = now_s();
	for (k = 0; k < par; k++)
		pthread_create(&t[k], NULL, worker, NULL);
	for (k = 0; k < par; k++)
		pthread_join(t[k], NULL);
	return now_s() - t0;
}

/* Rows for N intents or ready documents, 1000 per transaction. */
static int
plant_rows(struct services *s, int ready)
{
	char name[256], doc[300];
	uint64_t id;
	long i;

	for (i = 0; i < N; i++) {
		if (i % 1000 == 0 && db_begin(s->db) != DB_OK)
			return -1;
		name_of(i, name, sizeof name);
		snprintf(doc, sizeof doc, "bench-%s", name);
		if (ready) {
			/* "benchmark bytes" is 15 bytes; its SHA-256 as the metadata says. */
			static const char sha[] =
				"ba1370283a334fab7a28bade2cd18a857f319babaacec3ec4346e9eb68eba93b";
			if (plant_doc(s->db, doc, "ready", name, 15, sha, &id) != DB_OK ||
			    plant_row(s->db, name, id, "create", "committed", 0, NULL) != DB_OK)
				return -1;
		} else if (plant_doc(s->db, doc, "pending", name, 0, NULL, &id) != DB_OK ||
			   plant_row(s->db, name, id, "create", "pending", 7200, NULL) != DB_OK)
			return -1;
		if ((i % 1000 == 999 || i == N - 1) && db_commit(s->db) != DB_OK)
			return -1;
	}
	return 0;
}

static int
count_item(void *ctx, const struct blob_list_item *it)
{
	(void)it;
	(*(long *)ctx)++;
	return 0;
}

static int
delete_item(void *ctx, const struct blob_list_item *it)
{
	struct blob_result r;

	if (blob_delete(((struct services *)ctx)->blob, it->name, NULL, NULL, &r) != 0 &&
	    r.status != BLOB_NOT_FOUND)
		return 1;
	return 0;
}

static const char sql_clean_blobs[] = "DELETE FROM blobs WHERE LEFT(name, CHAR_LENGTH(?)) = ?";
static const char sql_clean_docs[] = "DELETE FROM documents WHERE LEFT(blob_name, CHAR_LENGTH(?)) = ?";

static long
number(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	return *end == '\0' && v >= 0 ? v : -1;
}

int main(int, char **);

int
main(int argc, char **argv)
{
	struct services *s = NULL;
	struct blob_result r;
	char err[512], warn[512];
	const char *cmd;
	double secs;
	long listed = 0;
	int par;

	if (argc < 3 || getenv("BINDERY_CONFIG") == NULL) {
		fprintf(stderr, "usage: BINDERY_CONFIG=... bench_sweep plant-intents|plant-ready|"
				"raw-delete|list|clean PREFIX [N [PAR]]\n");
		return 64;
	}
	cmd = argv[1];
	PREFIX = argv[2];
	N = argc > 3 ? number(argv[3]) : 0;
	par = argc > 4 ? (int)number(argv[4]) : 8;
	if (N < 0 || par < 1) {
		fprintf(stderr, "bench_sweep: bad N or PAR\n");
		return 64;
	}
	if (config_load(getenv("BINDERY_CONFIG"), &CFG, err, sizeof err, warn, sizeof warn) != 0 ||
	    services_open(CFG, &s, err, sizeof err) != 0) {
		fprintf(stderr, "bench_sweep: %s\n", err);
		return 78;
	}
	if (strcmp(cmd, "plant-intents") == 0 || strcmp(cmd, "plant-ready") == 0) {
		int ready = strcmp(cmd, "plant-ready") == 0;

		secs = run_parallel(ready ? UPLOAD_COMMITTED : UPLOAD_PENDING, par);
		printf("planted_blobs %ld in %.2fs (%ld failed)\n", N, secs, failures);
		secs = now_s();
		if (plant_rows(s, ready) != 0) {
			fprintf(stderr, "bench_sweep: rows: %s\n", db_last_error(s->db));
			return 1;
		}
		printf("planted_rows %ld in %.2fs\n", N, now_s() - secs);
	} else if (strcmp(cmd, "raw-delete") == 0) {
		secs = run_parallel(UPLOAD_COMMITTED, par);
		printf("planted_blobs %ld in %.2fs\n", N, secs);
		secs = run_parallel(DELETE_RAW, par);
		printf("raw_delete %ld in %.3fs with %d clients (%ld failed)\n", N, secs, par, failures);
		printf("raw_delete_per_s %.1f\n", (double)N / secs);
	} else if (strcmp(cmd, "raw-batch-delete") == 0) {
		secs = run_parallel(UPLOAD_COMMITTED, par);
		printf("planted_blobs %ld in %.2fs\n", N, secs);
		secs = run_parallel(DELETE_BATCH, par);
		printf("raw_batch_delete %ld in %.3fs with %d clients (%ld failed)\n", N, secs, par,
		       failures);
		printf("raw_batch_delete_per_s %.1f\n", (double)N / secs);
	} else if (strcmp(cmd, "list") == 0) {
		secs = now_s();
		/* BENCH_LIST_METADATA=1: what `audit --deep` asks for. */
		unsigned inc = BLOB_LIST_TAGS | (getenv("BENCH_LIST_METADATA") ? BLOB_LIST_METADATA : 0);

		if (blob_list(s->blob, PREFIX, inc, count_item, &listed, &r) != 0) {
			fprintf(stderr, "bench_sweep: list: %s\n", blob_status_name(r.status));
			return 1;
		}
		secs = now_s() - secs;
		printf("listed %ld in %.3fs\nlist_per_s %.1f\n", listed, secs, (double)listed / secs);
	} else if (strcmp(cmd, "clean") == 0) {
		struct db_param p[] = { DBP_STR(PREFIX), DBP_STR(PREFIX) };

		if (db_exec(s->db, sql_clean_blobs, p, 2, NULL) != DB_OK ||
		    db_exec(s->db, sql_clean_docs, p, 2, NULL) != DB_OK ||
		    blob_list(s->blob, PREFIX, 0, delete_item, s, &r) != 0)
			fprintf(stderr, "bench_sweep: clean-up incomplete\n");
	} else {
		fprintf(stderr, "bench_sweep: unknown command %s\n", cmd);
		return 64;
	}
	services_free(s);
	config_free(CFG);
	return 0;
}
