/*
 * audit_json.h - reading `bindery audit --json` in the audit tests: a
 * finding by kind and name, a count.  Header-only (static functions), like
 * sweep_plant.h; the including program links Jansson.
 */
#ifndef BINDERY_AUDIT_JSON_H
#define BINDERY_AUDIT_JSON_H

#include <string.h>

#include <jansson.h>

#include "base/compat.h"

/* The finding of kind for name in the audit's JSON j, or NULL. */
static BINDERY_UNUSED json_t *
audit_find(json_t *j, const char *kind, const char *name)
{
	json_t *f;
	size_t i;

	json_array_foreach(json_object_get(j, "findings"), i, f) {
		if (strcmp(json_string_value(json_object_get(f, "kind")), kind) == 0 &&
		    strcmp(json_string_value(json_object_get(f, "name")), name) == 0)
			return f;
	}
	return NULL;
}

/* counts.what of the audit's JSON j (0 when absent). */
static BINDERY_UNUSED long long
audit_count(json_t *j, const char *what)
{
	return json_integer_value(json_object_get(json_object_get(j, "counts"), what));
}

#endif
