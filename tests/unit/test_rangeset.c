/*
 * An fcntl lock owner's byte ranges (fs/rangeset.h): POSIX's rules for
 * one owner's own locks (a lock replaces the owner's ranges where it
 * lies, an unlock splits them), the lock the set needs, the struct flock
 * forms libfuse hands over; and every call checked against a model that
 * keeps one type per byte.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>

#include "rangeset.h"

#define EOF_ RANGESET_EOF

/* set = set after the call (the old set freed), checked valid. */
static void apply(struct rangeset *set, int64_t start, int64_t end, short type)
{
	struct rangeset next;

	cr_assert_eq(rangeset_applied(set, start, end, type, &next), 0);
	cr_assert(rangeset_valid(&next), "an invalid set after [%lld, %lld]",
		  (long long)start, (long long)end);
	rangeset_free(set);
	*set = next;
}

/* The set is exactly the n ranges listed. */
static void expect(const struct rangeset *set, size_t n,
		   const struct lockrange *want)
{
	cr_assert_eq(set->n, n, "%zu ranges, expected %zu", set->n, n);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(set->r[i].start, want[i].start,
			     "range %zu starts at %lld, expected %lld", i,
			     (long long)set->r[i].start,
			     (long long)want[i].start);
		cr_assert_eq(set->r[i].end, want[i].end,
			     "range %zu ends at %lld, expected %lld", i,
			     (long long)set->r[i].end, (long long)want[i].end);
		cr_assert_eq(set->r[i].type, want[i].type,
			     "range %zu has type %d, expected %d", i,
			     set->r[i].type, want[i].type);
	}
}

#define EXPECT(set, ...)                                                \
	do {                                                            \
		const struct lockrange want_[] = { __VA_ARGS__ };       \
		expect((set), sizeof(want_) / sizeof(want_[0]), want_); \
	} while (0)

Test(rangeset, a_whole_file_lock_is_one_range_to_the_end)
{
	struct rangeset s = RANGESET_EMPTY;

	cr_assert_eq(rangeset_type(&s), F_UNLCK);
	apply(&s, 0, EOF_, F_WRLCK);
	EXPECT(&s, { 0, EOF_, F_WRLCK });
	cr_assert_eq(rangeset_type(&s), F_WRLCK);
	apply(&s, 0, EOF_, F_UNLCK);
	cr_assert_eq(s.n, 0);
	cr_assert_null(s.r);
	cr_assert_eq(rangeset_type(&s), F_UNLCK);
}

Test(rangeset, a_read_and_a_write_range_need_the_write_lock_until_it_goes)
{
	struct rangeset s = RANGESET_EMPTY;

	apply(&s, 0, 9, F_RDLCK);
	apply(&s, 100, 109, F_WRLCK);
	EXPECT(&s, { 0, 9, F_RDLCK }, { 100, 109, F_WRLCK });
	cr_assert_eq(rangeset_type(&s), F_WRLCK);
	apply(&s, 100, 109, F_UNLCK);
	EXPECT(&s, { 0, 9, F_RDLCK });
	cr_assert_eq(rangeset_type(&s), F_RDLCK, "a downgrade to read");
	apply(&s, 0, 9, F_UNLCK);
	cr_assert_eq(rangeset_type(&s), F_UNLCK, "the last range released");
}

Test(rangeset, unlocking_a_sub_range_keeps_the_rest)
{
	struct rangeset s = RANGESET_EMPTY;

	apply(&s, 0, 99, F_WRLCK);
	apply(&s, 10, 19, F_UNLCK);
	EXPECT(&s, { 0, 9, F_WRLCK }, { 20, 99, F_WRLCK });
	apply(&s, 0, 0, F_UNLCK);
	EXPECT(&s, { 1, 9, F_WRLCK }, { 20, 99, F_WRLCK });
	apply(&s, 99, 200, F_UNLCK);
	EXPECT(&s, { 1, 9, F_WRLCK }, { 20, 98, F_WRLCK });
	apply(&s, 50, EOF_, F_UNLCK);
	EXPECT(&s, { 1, 9, F_WRLCK }, { 20, 49, F_WRLCK });
	rangeset_free(&s);
}

Test(rangeset, a_lock_over_the_owners_range_replaces_it_where_they_overlap)
{
	struct rangeset s = RANGESET_EMPTY;

	apply(&s, 0, 99, F_WRLCK);
	apply(&s, 50, 149, F_RDLCK);
	EXPECT(&s, { 0, 49, F_WRLCK }, { 50, 149, F_RDLCK });
	apply(&s, 20, 29, F_RDLCK); /* inside: cut in three */
	EXPECT(&s, { 0, 19, F_WRLCK }, { 20, 29, F_RDLCK }, { 30, 49, F_WRLCK },
	       { 50, 149, F_RDLCK });
	apply(&s, 10, 60, F_WRLCK); /* over several */
	EXPECT(&s, { 0, 60, F_WRLCK }, { 61, 149, F_RDLCK });
	cr_assert_eq(rangeset_type(&s), F_WRLCK);
	apply(&s, 0, 60, F_RDLCK);
	EXPECT(&s, { 0, 149, F_RDLCK });
	cr_assert_eq(rangeset_type(&s), F_RDLCK);
	rangeset_free(&s);
}

Test(rangeset, touching_ranges_of_one_type_are_one)
{
	struct rangeset s = RANGESET_EMPTY;

	apply(&s, 10, 19, F_RDLCK);
	apply(&s, 0, 9, F_RDLCK);
	apply(&s, 20, 29, F_RDLCK);
	EXPECT(&s, { 0, 29, F_RDLCK });
	apply(&s, 30, EOF_, F_WRLCK); /* another type stays apart */
	EXPECT(&s, { 0, 29, F_RDLCK }, { 30, EOF_, F_WRLCK });
	apply(&s, 5, 5, F_RDLCK); /* inside one of its type: no change */
	EXPECT(&s, { 0, 29, F_RDLCK }, { 30, EOF_, F_WRLCK });
	apply(&s, 40, 49, F_WRLCK);
	EXPECT(&s, { 0, 29, F_RDLCK }, { 30, EOF_, F_WRLCK });
	rangeset_free(&s);
}

Test(rangeset, unlocking_what_the_owner_does_not_hold_changes_nothing)
{
	struct rangeset s = RANGESET_EMPTY;

	apply(&s, 0, EOF_, F_UNLCK);
	cr_assert_eq(s.n, 0);
	apply(&s, 10, 19, F_WRLCK);
	apply(&s, 0, 9, F_UNLCK);
	apply(&s, 20, EOF_, F_UNLCK);
	EXPECT(&s, { 10, 19, F_WRLCK });
	rangeset_free(&s);
}

Test(rangeset, the_set_before_a_call_is_left_as_it_was)
{
	struct rangeset s = RANGESET_EMPTY, after;

	apply(&s, 0, 9, F_RDLCK);
	cr_assert_eq(rangeset_applied(&s, 0, EOF_, F_UNLCK, &after), 0);
	EXPECT(&s, { 0, 9, F_RDLCK });
	cr_assert_eq(after.n, 0);
	cr_assert_eq(rangeset_applied(NULL, 3, 4, F_WRLCK, &after), 0);
	EXPECT(&after, { 3, 4, F_WRLCK });
	rangeset_free(&after);
	rangeset_free(&s);
}

/* An unlock needs no new set when its range holds every range of the
 * owner's (rangeset_within): the whole file, or from before the first
 * to past the last. */
Test(rangeset, a_range_holds_the_set_when_it_spans_its_first_and_last)
{
	struct rangeset s = RANGESET_EMPTY;
	struct lockrange whole = { 0, EOF_, F_UNLCK },
			 span = { 5, 29, F_UNLCK }, short_ = { 5, 28, F_UNLCK },
			 late = { 6, 29, F_UNLCK };

	cr_assert(rangeset_within(&s, &short_), "the empty set is within any");
	apply(&s, 5, 9, F_RDLCK);
	apply(&s, 20, 29, F_WRLCK);
	cr_assert(rangeset_within(&s, &whole));
	cr_assert(rangeset_within(&s, &span));
	cr_assert_not(rangeset_within(&s, &short_));
	cr_assert_not(rangeset_within(&s, &late));
	rangeset_free(&s);
}

/* ---- struct flock as libfuse gives it ---------------------------------- */

static int range_of(short type, int64_t start, int64_t len, struct lockrange *r)
{
	struct flock fl = { .l_type = type,
			    .l_whence = SEEK_SET,
			    .l_start = start,
			    .l_len = len };

	return rangeset_range_of(&fl, r);
}

Test(rangeset, flock_ranges)
{
	struct lockrange r;

	cr_assert_eq(range_of(F_WRLCK, 0, 0, &r), 0);
	cr_assert(r.start == 0 && r.end == EOF_ && r.type == F_WRLCK,
		  "l_len 0 is to the end of the file");
	cr_assert_eq(range_of(F_RDLCK, 0, 10, &r), 0);
	cr_assert(r.start == 0 && r.end == 9 && r.type == F_RDLCK);
	cr_assert_eq(range_of(F_UNLCK, 100, 0, &r), 0);
	cr_assert(r.start == 100 && r.end == EOF_ && r.type == F_UNLCK);
	cr_assert_eq(range_of(F_WRLCK, 10, -5, &r), 0);
	cr_assert(r.start == 5 && r.end == 9, "the 5 bytes before 10");
	cr_assert_eq(range_of(F_WRLCK, 1, EOF_, &r), 0);
	cr_assert(r.start == 1 && r.end == EOF_);
	/* Java's lock(0, Long.MAX_VALUE): l_len 0, or the largest range. */
	cr_assert_eq(range_of(F_WRLCK, 0, EOF_, &r), 0);
	cr_assert(r.start == 0 && r.end == EOF_ - 1);
}

Test(rangeset, flock_ranges_refused)
{
	struct lockrange r;
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_CUR };

	cr_assert_eq(range_of(F_WRLCK, -1, 0, &r), -EINVAL);
	cr_assert_eq(range_of(F_WRLCK, 3, -4, &r), -EINVAL);
	cr_assert_eq(range_of(F_WRLCK, 0, INT64_MIN, &r), -EINVAL);
	cr_assert_eq(range_of(F_WRLCK, 2, EOF_, &r), -EOVERFLOW);
	cr_assert_eq(range_of(F_WRLCK, EOF_, 2, &r), -EOVERFLOW);
	cr_assert_eq(range_of(42, 0, 0, &r), -EINVAL);
	cr_assert_eq(rangeset_range_of(&fl, &r), -EINVAL);
}

/* ---- every call against a model --------------------------------------- */

/* Bytes 0..MODEL_BYTES-1; the last stands for every byte from there to
 * the end of the file, so that ranges to RANGESET_EOF are modelled. */
#define MODEL_BYTES 48

static short model_type_at(const struct rangeset *s, int64_t at)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->r[i].start <= at && at <= s->r[i].end)
			return s->r[i].type;
	return F_UNLCK;
}

Test(rangeset, random_calls_agree_with_a_byte_by_byte_model)
{
	static const short types[] = { F_RDLCK, F_WRLCK, F_UNLCK };
	struct rangeset s = RANGESET_EMPTY;
	short model[MODEL_BYTES];
	unsigned seed = 56;

	for (int b = 0; b < MODEL_BYTES; b++)
		model[b] = F_UNLCK;
	for (int step = 0; step < 20000; step++) {
		int64_t start = rand_r(&seed) % (MODEL_BYTES - 1);
		int64_t end = start + rand_r(&seed) % (MODEL_BYTES - 1 - start);
		short type = types[rand_r(&seed) % 3], want = F_UNLCK;
		int to_eof = rand_r(&seed) % 8 == 0;

		apply(&s, start, to_eof ? EOF_ : end, type);
		for (int64_t b = start; b <= (to_eof ? MODEL_BYTES - 1 : end);
		     b++)
			model[b] = type;
		for (int b = 0; b < MODEL_BYTES; b++) {
			short at = model_type_at(&s, b == MODEL_BYTES - 1 ? EOF_
									  : b);
			cr_assert_eq(at, model[b],
				     "step %d: byte %d has type %d, the model "
				     "%d",
				     step, b, at, model[b]);
			if (model[b] == F_WRLCK ||
			    (model[b] == F_RDLCK && want == F_UNLCK))
				want = model[b];
		}
		cr_assert_eq(rangeset_type(&s), want, "step %d", step);
	}
	rangeset_free(&s);
}
