/*
 * admission.h - what gets in (doc/design.md, "Admission"): an upload's type
 * judged by its first bytes (libmagic, [upload] allowed_types and
 * content_type) and its bytes scanned by clamd ([scan]), between "bytes
 * stored" and "tag committed", so nothing that lets an upload become ready
 * without the responder happens before it passes.
 *
 * Two ways in.  Where the bytes pass through this process (create,
 * replace), admission_begin wraps the request body: the type is judged on
 * its first SNIFF_BYTES before anything is stored, and every byte goes to
 * clamd as storage reads it; admission_verdict, once the body is stored,
 * says whether it may be committed.  Where they do not (a tus upload's
 * finish, a direct finalize), the bytes read back from storage are handed
 * to admission_stored_data and admission_stored_end judges both.
 *
 * An installation without allowed_types, a sniffed content_type or [scan]
 * gets no admission (NULL handles, the body untouched) and loads neither
 * libmagic nor a socket.
 */
#ifndef BINDERY_ADMISSION_H
#define BINDERY_ADMISSION_H

#include <stddef.h>

#include "base/compat.h"
#include "parse/config.h"
#include "protocol/result.h"
#include "protocol/services.h"
#include "protocol/sniff.h"

struct admission;

/* Whether this configuration admits anything at all. */
int admission_configured(const struct bindery_config *cfg);

/* "unix:" and a path, or "[" an IPv6 address "]:" and a port, and a NUL. */
#define ADMISSION_CLAMD_ADDRESS_MAX (CONFIG_UNIX_PATH_MAX + CONFIG_DB_HOST_MAX + 16)

/*
 * [scan] clamd as clamd_open and clamd_ping take it, into out[outlen]
 * (ADMISSION_CLAMD_ADDRESS_MAX fits any): the one rendering of the
 * configured address, for uploads and for `bindery scan` alike.  0, or -1
 * when it does not fit or [scan] clamd is not set.
 */
BINDERY_NODISCARD int admission_clamd_address(const struct bindery_config *cfg, char *out, size_t outlen);

/*
 * Begin admitting the body *in of a create or replace.  PROTO_OK: *out is
 * the body to store (in's bytes, the first ones read again; its
 * content_type the type to record and serve, borrowed from *adm) and *adm
 * is handed over (NULL when nothing is admitted: then *out is *in);
 * admission_free it after the last use of *out.  Otherwise *adm is NULL
 * and nothing was stored:
 *   PROTO_TYPE_REFUSED   the type is not in allowed_types (logged);
 *   PROTO_SCAN_UNAVAILABLE  clamd cannot be reached and on_scanner_error is
 *                        refuse (logged);
 *   PROTO_BODY_ERROR     reading the first bytes failed;
 *   PROTO_UNAVAILABLE    libmagic could not be loaded (logged);
 *   PROTO_FAILED         out of memory.
 */
BINDERY_NODISCARD enum proto_result admission_begin(struct services *s, const struct proto_body *in,
						    struct proto_body *out, struct admission **adm);

/*
 * The scan's verdict once every byte of the body went through admission's
 * body (NULL adm: PROTO_OK).  PROTO_OK: admitted (clean; or clamd could not
 * answer and on_scanner_error is admit, logged).  PROTO_INFECTED (the
 * signature logged), PROTO_SCAN_UNAVAILABLE (clamd could not answer, or
 * answered with a size limit, which is never clean), PROTO_FAILED (the body
 * was not read to its end: a verdict on part of it is none).
 */
BINDERY_NODISCARD enum proto_result admission_verdict(struct admission *adm);

/*
 * Bytes stored without this process: begin, hand every byte read back from
 * storage, in order, to admission_stored_data, then admission_stored_end.
 * admission_stored_begin: PROTO_OK with *adm (NULL when nothing is
 * admitted), or PROTO_SCAN_UNAVAILABLE / PROTO_FAILED as above.
 */
BINDERY_NODISCARD enum proto_result admission_stored_begin(struct services *s, struct admission **adm);
void admission_stored_data(struct admission *adm, const char *data, size_t len);

/*
 * The judgement of bytes handed to admission_stored_data, all of them
 * (complete nonzero; otherwise PROTO_FAILED): the type first
 * (PROTO_TYPE_REFUSED), then the scan (as admission_verdict).  On PROTO_OK
 * type[typelen] (SNIFF_TYPE_MAX fits) holds the type to record: declared,
 * or the sniffed one when the configuration records those.
 */
BINDERY_NODISCARD enum proto_result admission_stored_end(struct admission *adm, int complete,
							 const char *declared, char *type, size_t typelen);

void admission_free(struct admission *adm);

#endif
