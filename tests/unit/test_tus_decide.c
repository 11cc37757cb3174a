/*
 * test_tus_decide.c - the pure decisions of a tus PATCH (lib/protocol/tus.c):
 * which offset a client is told, what a PATCH at a given offset is, and
 * whether a chunk leaves the upload able to finish within the block list's
 * 50,000 blocks.  The rules, written from doc/design.md ("Resumable uploads"):
 *   - the whole length is acknowledged only once the document is ready;
 *     before, the last recorded block is held back, so a client that heard
 *     "complete" never needs to come back;
 *   - a PATCH appends at the recorded offset, re-sends the unacknowledged
 *     tail, or (ready) repeats the end; anything else is 409.
 */
#include <stdint.h>

#include "protocol/tus.h"
#include "tap.h"

#define MIB (1024ull * 1024)

static void
test_acknowledged(void)
{
	tap_ok(tus_acknowledged(0, 10, 0, 0) == 0, "nothing recorded: 0");
	tap_ok(tus_acknowledged(4, 10, 4, 0) == 4, "part recorded: all of it");
	tap_ok(tus_acknowledged(10, 10, 2, 0) == 8, "all recorded, not ready: the last block held back");
	tap_ok(tus_acknowledged(10, 10, 10, 0) == 0, "one block, all recorded, not ready: 0");
	tap_ok(tus_acknowledged(10, 10, 2, 1) == 10, "ready: the whole length");
	tap_ok(tus_acknowledged(0, 0, 0, 0) == 0 && tus_acknowledged(0, 0, 0, 1) == 0, "an empty upload");
}

static void
test_offsets(void)
{
	uint64_t off;
	int ready, seen_tail = 0, seen_done = 0, seen_append = 0, wrong_ok = 1;

	/* Every offset 0..12 against each state of a 10-byte upload. */
	for (ready = 0; ready <= 1; ready++) {
		for (off = 0; off <= 12; off++) {
			enum tus_offset_verdict v;

			v = tus_offset_decide(off, 4, 10, 4, 0);
			if ((off == 4) != (v == TUS_OFFSET_APPEND))
				wrong_ok = 0;
			seen_append += v == TUS_OFFSET_APPEND;
			v = tus_offset_decide(off, 10, 10, 3, ready);
			if (ready) {
				if ((off == 10) != (v == TUS_OFFSET_DONE) || v == TUS_OFFSET_TAIL)
					wrong_ok = 0;
				seen_done += v == TUS_OFFSET_DONE;
			} else {
				if ((off == 7) != (v == TUS_OFFSET_TAIL) || v == TUS_OFFSET_DONE ||
				    v == TUS_OFFSET_APPEND)
					wrong_ok = 0;
				seen_tail += v == TUS_OFFSET_TAIL;
			}
		}
	}
	tap_ok(wrong_ok, "only the recorded offset appends, only length - last block re-sends the tail,"
	       " only length repeats a finished upload; every other offset is 409");
	tap_ok(seen_append == 2 && seen_tail == 1 && seen_done == 1, "each verdict at exactly one offset");
	tap_ok(tus_offset_decide(10, 10, 10, 3, 0) == TUS_OFFSET_WRONG,
	       "the full length before ready is not acknowledged, so a PATCH there is 409");
	tap_ok(tus_offset_decide(0, 0, 0, 0, 0) == TUS_OFFSET_TAIL,
	       "an empty upload's one PATCH finishes it");
	tap_ok(tus_offset_decide(0, 0, 5, 0, 0) == TUS_OFFSET_APPEND, "a fresh upload appends at 0");
}

static void
test_blocks_fit(void)
{
	const uint64_t bs = 4 * MIB;

	tap_ok(tus_blocks_fit(0, 0, bs), "nothing left, no blocks: fits");
	tap_ok(tus_blocks_fit(50000, 0, bs), "exactly 50000 blocks and nothing left: fits");
	tap_ok(!tus_blocks_fit(50001, 0, bs), "50001 blocks: does not");
	tap_ok(tus_blocks_fit(49999, bs, bs), "one full block left after 49999: fits");
	tap_ok(!tus_blocks_fit(49999, bs + 1, bs), "a block and a byte left after 49999: does not");
	tap_ok(!tus_blocks_fit(1, 49999 * bs + 1, bs), "a 1-byte first chunk of 49999 blocks + 1 byte:"
	       " the rest needs 50000 more, does not fit");
	tap_ok(tus_blocks_fit(1, 49999 * bs, bs), "... but of exactly 49999 more blocks: fits");
}

/* tus_patch_shape's answer as "lead/block" in bytes, for one TAP_EQ_STR. */
static const char *
shape(int64_t declared, uint64_t room, uint64_t nblocks, uint64_t bs, unsigned in_flight)
{
	static char out[64];
	struct tus_shape sh = tus_patch_shape(declared, room, nblocks, bs, in_flight);

	snprintf(out, sizeof out, "%llu/%llu", (unsigned long long)sh.lead, (unsigned long long)sh.block);
	return out;
}

static void
test_patch_shape(void)
{
	const uint64_t bs = 4 * MIB, up = 256 * MIB;
	const struct tus_shape led2 = { 512 * 1024, 2 * MIB }, plain4 = { 0, 4 * MIB };

	TAP_EQ_STR(shape(8 * MIB, up, 0, bs, 4), "524288/2097152",
		   "an 8 MiB PATCH with 4 in flight: a 512 KiB lead, then blocks of 2 MiB");
	TAP_EQ_STR(shape(8 * MIB + 1, up, 0, bs, 4), "524288/2097153",
		   "rounded up, so the PATCH stays about 4 blocks");
	TAP_EQ_STR(shape(64 * MIB, up, 0, bs, 4), "524288/4194304", "never above block_size");
	TAP_EQ_STR(shape(2 * MIB, up, 0, bs, 4), "524288/1048576", "never below TUS_MIN_BLOCK");
	TAP_EQ_STR(shape(MIB, up, 0, bs, 4), "0/1048576", "a PATCH of one block has no lead");
	TAP_EQ_STR(shape(-1, up, 0, bs, 4), "0/4194304", "no declared length: block_size, no lead");
	TAP_EQ_STR(shape(0, up, 0, bs, 4), "0/4194304", "an empty PATCH: block_size");
	TAP_EQ_STR(shape(8 * MIB, 4 * MIB, 0, bs, 4), "0/4194304",
		   "more than the upload's room: block_size (the PATCH is refused anyway)");
	TAP_EQ_STR(shape(8 * MIB, up, 0, bs, 1), "524288/4194304", "one in flight: block_size, led");
	TAP_EQ_STR(shape(8 * MIB, up, 0, 256 * 1024, 4), "0/262144",
		   "blocks no larger than a lead: no lead");
	TAP_EQ_STR(shape(8 * MIB, 8 * MIB + 49995 * bs, 0, bs, 4), "524288/2097152",
		   "a lead, 4 blocks of 2 MiB and 49995 full ones make 50000: the small shape");
	TAP_EQ_STR(shape(8 * MIB, 8 * MIB + 49996 * bs, 0, bs, 4), "524288/4194304",
		   "one more full block after: a lead and blocks of block_size (3 blocks)");
	TAP_EQ_STR(shape(8 * MIB, 8 * MIB + 49997 * bs, 0, bs, 4), "524288/4194304",
		   "... which still fit with 49997 after (50000)");
	TAP_EQ_STR(shape(8 * MIB, 8 * MIB + 49998 * bs, 0, bs, 4), "0/4194304",
		   "and with 49998 after: no lead (2 blocks)");
	TAP_EQ_STR(shape(8 * MIB, 8 * MIB + 49994 * bs, 1, bs, 4), "524288/2097152",
		   "1 recorded, a lead, 4 small blocks and 49994 full ones fit");

	TAP_EQ_INT(tus_shape_blocks(led2, 0), 0, "no bytes, no blocks");
	TAP_EQ_INT(tus_shape_blocks(led2, 8 * MIB), 5, "8 MiB led: 512 KiB + 3 x 2 MiB + 1.5 MiB");
	TAP_EQ_INT(tus_shape_blocks(led2, 512 * 1024), 1, "the lead alone");
	TAP_EQ_INT(tus_shape_blocks(led2, 512 * 1024 + 1), 2, "the lead and a byte");
	TAP_EQ_INT(tus_shape_blocks(plain4, 8 * MIB), 2, "no lead: 2 blocks of 4 MiB");
	TAP_EQ_INT(tus_shape_blocks(plain4, 8 * MIB + 1), 3, "... and a short third");
}

/* 409 upload_busy's Retry-After: until the window a silent holder keeps,
 * at least 1, at most TUS_BUSY_RETRY_MAX (a dead one may go any moment). */
static void
test_busy_retry_after(void)
{
	TAP_EQ_INT(tus_busy_retry_after(0, 330000), TUS_BUSY_RETRY_MAX, "renewed just now, 330 s window: the cap");
	TAP_EQ_INT(tus_busy_retry_after(-1, 330000), TUS_BUSY_RETRY_MAX, "no holder or a clock stepped back: the cap");
	TAP_EQ_INT(tus_busy_retry_after(0, 3000), 3, "a 3 s window: 3");
	TAP_EQ_INT(tus_busy_retry_after(4001, 6000), 2, "1999 ms left: rounded up to 2");
	TAP_EQ_INT(tus_busy_retry_after(5999, 6000), 1, "1 ms left: 1");
	TAP_EQ_INT(tus_busy_retry_after(6000, 6000), 1, "lapsed: 1, never 0");
	TAP_EQ_INT(tus_busy_retry_after(INT64_MAX, 6000), 1, "long lapsed: 1");
	TAP_EQ_INT(tus_busy_retry_after(0, 0), 1, "no window: 1");
}

int
main(void)
{
	test_acknowledged();
	test_busy_retry_after();
	test_offsets();
	test_blocks_fit();
	test_patch_shape();
	return tap_done();
}
