/* state.c - see state.h.  Each table below is the one place a state is spelled. */
#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "base/state.h"

static const char *const doc_status_names[DOC_STATUS_COUNT] = {
	[DOC_STATUS_UNKNOWN] = "",
	[DOC_STATUS_PENDING] = "pending",
	[DOC_STATUS_READY] = "ready",
};

static const char *const registry_state_names[REGISTRY_STATE_COUNT] = {
	[REGISTRY_STATE_UNKNOWN] = "",
	[REGISTRY_PENDING] = "pending",
	[REGISTRY_COMMITTED] = "committed",
	[REGISTRY_RETIRED] = "retired",
	[REGISTRY_SWEEPING] = "sweeping",
	[REGISTRY_DELETING] = "deleting",
};

static const char *const purpose_names[PURPOSE_COUNT] = {
	[PURPOSE_UNKNOWN] = "",
	[PURPOSE_CREATE] = "create",
	[PURPOSE_REPLACE] = "replace",
	[PURPOSE_PARTIAL] = "partial",
};

static const char *const route_names[UPLOAD_ROUTE_COUNT] = {
	[UPLOAD_ROUTE_UNKNOWN] = "",
	[UPLOAD_VIA_SERVER] = "server",
	[UPLOAD_VIA_DIRECT] = "direct",
};

static const char *const sweep_result_names[SWEEP_RESULT_COUNT] = {
	[SWEEP_RESULT_NONE] = "",
	[SWEEP_RESULT_OK] = "ok",
	[SWEEP_RESULT_PARTIAL] = "partial",
	[SWEEP_RESULT_FAILED] = "failed",
};

static const char *const delivery_state_names[DELIVERY_STATE_COUNT] = {
	[DELIVERY_STATE_UNKNOWN] = "",
	[DELIVERY_PENDING] = "pending",
	[DELIVERY_DELIVERED] = "delivered",
	[DELIVERY_DEAD] = "dead",
};

/* The guard is built from the same literal as the name, so the two cannot drift. */
#define TAG_GUARD(value) "\"" TAG_STATE_KEY "\" = '" value "'"
#define TAG_ENTRY(value) { value, TAG_GUARD(value) }

static const struct {
	const char *name;
	const char *guard;
} tag_states[TAG_STATE_COUNT] = {
	[TAG_STATE_NONE] = { "", NULL },
	[TAG_STATE_PENDING] = TAG_ENTRY("pending"),
	[TAG_STATE_COMMITTED] = TAG_ENTRY("committed"),
	[TAG_STATE_RETIRED] = TAG_ENTRY("retired"),
	[TAG_STATE_UNKNOWN] = { "", NULL },
};

static const char *
name_at(const char *const *names, size_t n, unsigned i)
{
	return i < n ? names[i] : "";
}

/* Index of name among names[1..n-1] (0, the unknown value, names nothing). */
static unsigned
index_of(const char *const *names, size_t n, const char *name)
{
	size_t i;

	if (name == NULL || name[0] == '\0')
		return 0;
	for (i = 1; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (unsigned)i;
	return 0;
}

const char *
doc_status_name(enum doc_status s)
{
	return name_at(doc_status_names, DOC_STATUS_COUNT, (unsigned)s);
}

const char *
registry_state_name(enum registry_state s)
{
	return name_at(registry_state_names, REGISTRY_STATE_COUNT, (unsigned)s);
}

const char *
intent_purpose_name(enum intent_purpose p)
{
	return name_at(purpose_names, PURPOSE_COUNT, (unsigned)p);
}

const char *
upload_route_name(enum upload_route r)
{
	return name_at(route_names, UPLOAD_ROUTE_COUNT, (unsigned)r);
}

const char *
sweep_result_name(enum sweep_result r)
{
	return name_at(sweep_result_names, SWEEP_RESULT_COUNT, (unsigned)r);
}

const char *
delivery_state_name(enum delivery_state s)
{
	return name_at(delivery_state_names, DELIVERY_STATE_COUNT, (unsigned)s);
}

const char *
tag_state_name(enum tag_state t)
{
	return (unsigned)t < TAG_STATE_COUNT ? tag_states[t].name : "";
}

enum doc_status
doc_status_from_name(const char *name)
{
	return (enum doc_status)index_of(doc_status_names, DOC_STATUS_COUNT, name);
}

enum registry_state
registry_state_from_name(const char *name)
{
	return (enum registry_state)index_of(registry_state_names, REGISTRY_STATE_COUNT, name);
}

enum intent_purpose
intent_purpose_from_name(const char *name)
{
	return (enum intent_purpose)index_of(purpose_names, PURPOSE_COUNT, name);
}

enum upload_route
upload_route_from_name(const char *name)
{
	return (enum upload_route)index_of(route_names, UPLOAD_ROUTE_COUNT, name);
}

enum sweep_result
sweep_result_from_name(const char *name)
{
	return (enum sweep_result)index_of(sweep_result_names, SWEEP_RESULT_COUNT, name);
}

enum delivery_state
delivery_state_from_name(const char *name)
{
	return (enum delivery_state)index_of(delivery_state_names, DELIVERY_STATE_COUNT, name);
}

enum tag_state
tag_state_from_name(const char *name)
{
	size_t i;

	if (name == NULL)
		return TAG_STATE_NONE;
	for (i = 0; i < TAG_STATE_COUNT; i++)
		if (tag_states[i].guard && strcmp(tag_states[i].name, name) == 0)
			return (enum tag_state)i;
	return TAG_STATE_UNKNOWN;
}

const char *
tag_state_guard(enum tag_state t)
{
	assert((unsigned)t < TAG_STATE_COUNT && tag_states[t].guard != NULL);
	return tag_states[t].guard;
}

int
tag_guard_for_value(const char *value, char *out, size_t outlen)
{
	int n;

	if (strchr(value, '\'') != NULL)
		return -1;
	n = snprintf(out, outlen, TAG_GUARD("%s"), value);
	return n >= 0 && (size_t)n < outlen ? 0 : -1;
}
