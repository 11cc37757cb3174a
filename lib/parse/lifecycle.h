/*
 * lifecycle.h - the Azure lifecycle-management policy that is bindery's
 * one-day backstop: base block blobs under the configured prefix still
 * tagged state=pending N days after creation are deleted by the service
 * itself, should every sweeper be gone.  Pure: builds JSON, touches nothing.
 * Reference: "Configure a lifecycle management policy" (blobIndexMatch,
 * prefixMatch values begin with the container name).
 */
#ifndef BINDERY_LIFECYCLE_H
#define BINDERY_LIFECYCLE_H

#include <jansson.h>

/* A new policy object, or NULL when days < 1 or memory ran out. */
json_t *lifecycle_policy_new(const char *container, const char *prefix, unsigned days);

#endif
