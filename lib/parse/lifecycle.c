/* lifecycle.c - see lifecycle.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/state.h"
#include "parse/lifecycle.h"

json_t *
lifecycle_policy_new(const char *container, const char *prefix, unsigned days)
{
	json_t *policy;
	char *match;
	size_t len;

	if (days < 1 || container == NULL || container[0] == '\0')
		return NULL;
	/* The rule's prefixMatch is "container/blob-prefix". */
	len = strlen(container) + 1 + strlen(prefix) + 1;
	match = malloc(len);
	if (match == NULL)
		return NULL;
	snprintf(match, len, "%s/%s", container, prefix);
	policy = json_pack(
	    "{s:[{s:s, s:b, s:s, s:{s:{s:[s], s:[s], s:[{s:s, s:s, s:s}]},"
	    " s:{s:{s:{s:I}}}}}]}",
	    "rules", "name", "bindery-pending-backstop", "enabled", 1, "type", "Lifecycle",
	    "definition", "filters", "blobTypes", "blockBlob", "prefixMatch", match,
	    "blobIndexMatch", "name", TAG_STATE_KEY, "op", "==", "value",
	    tag_state_name(TAG_STATE_PENDING),
	    "actions", "baseBlob", "delete", "daysAfterCreationGreaterThan", (json_int_t)days);
	free(match);
	return policy;
}
