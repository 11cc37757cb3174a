/*
 * clamd.h - a streaming client of clamd's INSTREAM command, and its PING.
 *
 * The bytes of an upload go to clamd while they arrive, so nothing is read
 * twice: open a stream, feed it any number of pieces of any size, finish it
 * for the verdict.  On the wire (clamd(8), "INSTREAM"): the command
 * "zINSTREAM" and a NUL, then chunks, each a 4-byte big-endian length and
 * that many bytes, and a chunk of length 0 to end; clamd answers one
 * NUL-terminated line: "stream: OK", "stream: NAME FOUND", or "... ERROR".
 * Past its StreamMaxLength clamd answers "INSTREAM size limit exceeded.
 * ERROR" at once and closes the connection, so a send that fails (EPIPE,
 * ECONNRESET), or a socket that turns readable before the end, means an
 * answer is waiting: it is read, and the rest of the stream only counted.
 *
 * A verdict is CLAMD_CLEAN only when clamd said "stream: OK" to the whole
 * stream.  A size limit is never clean: the ERROR above, and any signature
 * clamd names "Heuristics.Limits.Exceeded..." (its AlertExceedsMax report of
 * a file past MaxFileSize or MaxScanSize, which it did not scan) are
 * CLAMD_LIMIT.  Everything that stops a verdict (no connection, a timeout,
 * an I/O error, an answer this module does not understand, an "OK" before
 * the end of the stream) is CLAMD_UNAVAILABLE.  Without AlertExceedsMax
 * clamd answers "OK" for a file it skipped: conf/clamd-bindery.conf sets it.
 *
 * Every wait is bounded by the timeout given to clamd_open: the connect, the
 * sending of each chunk, and the answer, each within timeout_ms (poll(2);
 * sockets are non-blocking and writes use MSG_NOSIGNAL, so a closed peer is
 * an error, never SIGPIPE).  The answer's wait includes clamd's scan of the
 * whole stream, so the timeout must cover the scan of the largest upload.
 * One exception: a HOST that is a name, not a numeric address, is resolved
 * by getaddrinfo(3), which only the system resolver's own timeouts bound
 * (resolv.conf(5) "timeout", "attempts"); a unix socket or a numeric
 * address does not touch the resolver.
 *
 * Not thread-safe per stream; separate streams are independent.
 */
#ifndef BINDERY_CLAMD_H
#define BINDERY_CLAMD_H

#include <stddef.h>
#include <stdint.h>

#include "base/compat.h"

/* Bytes of data in one INSTREAM chunk: feeds are gathered up to this. */
#define CLAMD_CHUNK_SIZE 65536
/* A signature name kept in a verdict: longer ones are cut (and end "..."). */
#define CLAMD_SIGNATURE_MAX 128
/* A verdict's message for the log, NUL included. */
#define CLAMD_MESSAGE_MAX 320
/* An address: "unix:" and a sun_path, or a host name of 253 bytes. */
#define CLAMD_PATH_MAX 108
#define CLAMD_HOST_MAX 254

enum clamd_result {
	CLAMD_CLEAN,		/* clamd scanned the whole stream and found nothing */
	CLAMD_INFECTED,		/* clamd named a signature: signature holds it */
	CLAMD_LIMIT,		/* past a clamd limit, not scanned: never clean */
	CLAMD_UNAVAILABLE,	/* no verdict: unreachable, too slow, an I/O error, not understood */
};

struct clamd_verdict {
	enum clamd_result result;
	/* CLAMD_INFECTED, and CLAMD_LIMIT by signature: clamd's name for it
	 * (without the "(hash:size)" ExtendedDetectionInfo adds); "" otherwise. */
	char signature[CLAMD_SIGNATURE_MAX];
	/* One line for the log, for every result: what clamd said or what
	 * failed.  clamd's own words (here and in signature) come with every
	 * byte outside printable ASCII, '"' and '\\' as \xNN. */
	char message[CLAMD_MESSAGE_MAX];
};

enum clamd_err {
	CLAMD_OK = 0,
	CLAMD_ERR_ADDRESS,	/* not "unix:/ABSOLUTE/PATH" or "HOST:PORT" */
	CLAMD_ERR_NOMEM,
	CLAMD_ERR_UNAVAILABLE,	/* clamd_ping: no PONG within the timeout */
};

/* A short English phrase for e (static). */
const char *clamd_err_str(enum clamd_err e);
/* "clean", "infected", "limit" or "unavailable" (static). */
const char *clamd_result_str(enum clamd_result r);

enum clamd_address_kind { CLAMD_ADDRESS_UNIX, CLAMD_ADDRESS_TCP };

struct clamd_address {
	enum clamd_address_kind kind;
	char path[CLAMD_PATH_MAX];	/* CLAMD_ADDRESS_UNIX: absolute */
	char host[CLAMD_HOST_MAX];	/* CLAMD_ADDRESS_TCP: a name, IPv4, or IPv6 without [] */
	char port[6];			/* CLAMD_ADDRESS_TCP: 1..65535, decimal */
};

/*
 * Pure: addr as "unix:/ABSOLUTE/PATH" (shorter than a sun_path) or
 * "HOST:PORT", HOST a name of letters, digits, '-', '_' and '.', an IPv4
 * address, or an IPv6 address in brackets ("[::1]:3310").  On
 * CLAMD_ERR_ADDRESS *why (when why is not NULL) says what is wrong, a
 * static sentence, and *out is unspecified.
 */
BINDERY_NODISCARD enum clamd_err clamd_address_parse(const char *addr, struct clamd_address *out,
						     const char **why);

/*
 * Pure: clamd's answer to INSTREAM, reply[len] without its terminator, as a
 * verdict in *out (signature and message filled); returns out->result.
 * "stream: OK" is clean, "stream: NAME FOUND" infected (or a limit, for
 * Heuristics.Limits.Exceeded*), an ERROR naming a size limit a limit, and
 * every other answer (other ERRORs included) unavailable.  whole is nonzero
 * when the answer came after the whole stream was sent: an "OK" before the
 * end speaks of part of it, and is unavailable.
 */
enum clamd_result clamd_reply_parse(const char *reply, size_t len, int whole, struct clamd_verdict *out);

struct clamd;

/*
 * Connect to clamd at addr and start an INSTREAM, every wait within
 * timeout_ms (> 0).  CLAMD_OK hands over *out (clamd_free it) even when
 * clamd could not be reached: that stream is already settled
 * (clamd_settled) as CLAMD_UNAVAILABLE, so a caller has one path from here
 * to its verdict.  CLAMD_ERR_ADDRESS or CLAMD_ERR_NOMEM leave *out NULL.
 */
BINDERY_NODISCARD enum clamd_err clamd_open(const char *addr, int timeout_ms, struct clamd **out);

/*
 * Stream p[n] (any n, 0 included) to clamd, in chunks of CLAMD_CHUNK_SIZE
 * gathered across calls.  It has no error to return: a failure, or an
 * answer clamd gave before the end (a size limit), settles the stream, and
 * later feeds only count their bytes (clamd_fed).  The verdict comes from
 * clamd_finish.  Not after clamd_finish.
 */
void clamd_feed(struct clamd *, const void *p, size_t n);

/* Nonzero once the verdict is known before clamd_finish: the connection
 * failed, or clamd answered early (what it answered is the verdict). */
int clamd_settled(const struct clamd *);

/* Bytes fed so far, whether or not clamd still reads them. */
uint64_t clamd_fed(const struct clamd *);

/*
 * End the stream (the rest of the data and the zero-length chunk) and wait
 * for clamd's answer; the verdict in *out, also returned.  The connection is
 * closed.  A second call gives the same verdict again.
 */
BINDERY_NODISCARD enum clamd_result clamd_finish(struct clamd *, struct clamd_verdict *out);

/* Close and free; NULL is a no-op.  Without clamd_finish, clamd sees the
 * connection close mid-stream and scans nothing. */
void clamd_free(struct clamd *);

/*
 * PING, answered PONG, within timeout_ms (> 0): CLAMD_OK; CLAMD_ERR_ADDRESS
 * for a bad addr; CLAMD_ERR_UNAVAILABLE otherwise.  msg[msglen] (when msglen
 * > 0) says what happened, for the log.
 */
BINDERY_NODISCARD enum clamd_err clamd_ping(const char *addr, int timeout_ms, char *msg, size_t msglen);

#endif
