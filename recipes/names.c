/*
 * names.c - the grammar of lock node names (see names.h).
 */
#include "names.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#define NAMES_PROTECTED "_c_" /* Curator's protected-mode prefix; ours */
#define NAMES_PROTECTED_LEN 3

const char *names_mode_str(enum zkl_mode mode)
{
	static const char *const str[] = {
		[ZKL_MODE_READ] = "read",
		[ZKL_MODE_WRITE] = "write",
		[ZKL_MODE_LEASE] = "lease",
	};

	return str[mode];
}

const char *names_style_str(enum zkl_style style)
{
	static const char *const str[] = {
		[ZKL_STYLE_ZKLOCKFS] = "zklockfs",
		[ZKL_STYLE_CURATOR] = "curator",
		[ZKL_STYLE_KAZOO] = "kazoo",
		[ZKL_STYLE_ZOOKEEPER] = "zookeeper",
	};

	return style < ZKL_STYLE_COUNT ? str[style] : "?";
}

/* ---- the sequence ------------------------------------------------------- */

/* ZooKeeper's suffix is exactly "%010d" of the counter: ten digits, or '-'
 * and nine or ten digits once it wrapped.  Only that exact text counts, so
 * that a marker ending in '-' is never read as a sign ("lock-" then
 * "0000000001", not "lock" then "-000000001"... which is not "%010d" of -1
 * anyway: that is "-000000001"). */
static int names_parse_seq(const char *s, size_t len, int32_t *out)
{
	char canon[16];
	long long v = 0;
	size_t i = s[0] == '-';

	if (len < 10 || len > 11 || (len == 11 && !i))
		return -EINVAL;
	for (; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (s[0] == '-')
		v = -v;
	if (v < INT32_MIN || v > INT32_MAX)
		return -EINVAL;
	snprintf(canon, sizeof(canon), "%010d", (int)v);
	if (strlen(canon) != len || memcmp(canon, s, len) != 0)
		return -EINVAL;
	*out = (int32_t)v;
	return 0;
}

/* ---- owner tags --------------------------------------------------------- */

static int names_is_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static int names_is_guid(const char *s, size_t len)
{
	if (len != NAMES_GUID_LEN)
		return 0;
	for (size_t i = 0; i < NAMES_GUID_LEN; i++) {
		int dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !names_is_hex(s[i]))
			return 0;
	}
	return 1;
}

/* The GUID of Curator's protected prefix "_c_<uuid>-" at the start of the
 * first `len` bytes of name; sets the tag of n if there is one. */
static void names_protected_tag(const char *name, size_t len,
				struct zkl_node *n)
{
	const size_t end = NAMES_PROTECTED_LEN + NAMES_GUID_LEN;

	n->tag = NULL;
	n->taglen = 0;
	if (len > end && name[end] == '-' &&
	    strncmp(name, NAMES_PROTECTED, NAMES_PROTECTED_LEN) == 0 &&
	    names_is_guid(name + NAMES_PROTECTED_LEN, NAMES_GUID_LEN)) {
		n->tag = name + NAMES_PROTECTED_LEN;
		n->taglen = NAMES_GUID_LEN;
	}
}

/* ---- styles ------------------------------------------------------------- */

static int names_ends_with(const char *s, size_t len, const char *word)
{
	size_t wlen = strlen(word);

	return len >= wlen && memcmp(s + len - wlen, word, wlen) == 0;
}

/* The words of the shared-lock recipe, which zklockfs's names also use:
 * "write-" or "read-", ending the text before the sequence, at its start
 * or after a '-'.  Returns the length of the word and sets *mode, or 0. */
static size_t names_rw_word(const char *name, size_t len, enum zkl_mode *mode)
{
	static const struct {
		const char *word;
		enum zkl_mode mode;
	} words[] = { { "write-", ZKL_MODE_WRITE },
		      { "read-", ZKL_MODE_READ } };

	for (size_t k = 0; k < sizeof(words) / sizeof(words[0]); k++) {
		size_t wlen = strlen(words[k].word);
		if (!names_ends_with(name, len, words[k].word) ||
		    (len > wlen && name[len - wlen - 1] != '-'))
			continue;
		*mode = words[k].mode;
		return wlen;
	}
	return 0;
}

/* _c_<guid>-write-, _c_<guid>-read- or _c_<guid>-lease-: exactly, nothing
 * around.  The lease's name is also the one Curator's semaphore gives its
 * leases; Curator keeps them in <res>/leases, so only the place where a
 * lease stands tells whose layout it belongs to. */
static int names_zklockfs(const char *name, size_t len, struct zkl_node *n)
{
	enum zkl_mode mode = ZKL_MODE_LEASE;
	size_t wlen = names_rw_word(name, len, &mode);

	if (wlen == 0 && names_ends_with(name, len, "-lease-"))
		wlen = strlen("lease-");
	if (wlen == 0 || len != NAMES_PROTECTED_LEN + NAMES_GUID_LEN + 1 + wlen)
		return 0;
	names_protected_tag(name, len, n);
	if (!n->tag)
		return 0;
	n->style = ZKL_STYLE_ZKLOCKFS;
	n->mode = mode;
	return 1;
}

/* A marker that ends right before the sequence, and the style and mode it
 * means.  Curator sorts by the text after its marker and kazoo matches
 * "<marker>(-?\d{10})$", so the marker may follow anything. */
static const struct {
	const char *marker;
	enum zkl_style style;
	enum zkl_mode mode;
} names_markers[] = {
	{ "__WRIT__", ZKL_STYLE_CURATOR, ZKL_MODE_WRITE },
	{ "__READ__", ZKL_STYLE_CURATOR, ZKL_MODE_READ },
	{ "__rlock__", ZKL_STYLE_KAZOO, ZKL_MODE_READ },
	{ "__lock__", ZKL_STYLE_KAZOO, ZKL_MODE_WRITE },
	{ "lock-", ZKL_STYLE_CURATOR, ZKL_MODE_WRITE },
	{ "lease-", ZKL_STYLE_CURATOR, ZKL_MODE_LEASE },
};

static int names_marked(const char *name, size_t len, struct zkl_node *n)
{
	for (size_t k = 0; k < sizeof(names_markers) / sizeof(names_markers[0]);
	     k++) {
		const char *m = names_markers[k].marker;
		if (!names_ends_with(name, len, m))
			continue;
		n->style = names_markers[k].style;
		n->mode = names_markers[k].mode;
		if (n->style == ZKL_STYLE_KAZOO) { /* <tag>__lock__ */
			n->tag = name;
			n->taglen = len - strlen(m);
		} else {
			names_protected_tag(name, len, n);
		}
		return 1;
	}
	return 0;
}

/* ZooKeeper's recipes: x-<session>- (WriteLock: decimal in Java, %016llx
 * in C), and the shared-lock text's write- and read- at the start of the
 * name or after a '-'. */
static int names_zookeeper(const char *name, size_t len, struct zkl_node *n)
{
	size_t i = 2, wlen;

	n->style = ZKL_STYLE_ZOOKEEPER;
	if (len > 3 && name[0] == 'x' && name[1] == '-' &&
	    name[len - 1] == '-') {
		i += name[2] == '-'; /* Java prints a negative session id */
		while (i < len - 1 && names_is_hex(name[i]))
			i++;
		if (i == len - 1 && i > 2 + (name[2] == '-')) {
			n->mode = ZKL_MODE_WRITE;
			n->tag = name + 2;
			n->taglen = len - 3;
			return 1;
		}
	}
	wlen = names_rw_word(name, len, &n->mode);
	if (wlen == 0)
		return 0;
	n->tag = name;
	n->taglen = len > wlen ? len - wlen - 1 : 0;
	return 1;
}

int names_parse(const char *name, struct zkl_node *out)
{
	size_t len = strlen(name);

	/* Try the sequence as ten and as eleven characters: at most one
	 * leaves a marker right before it. */
	for (size_t width = 10; width <= 11 && width <= len; width++) {
		size_t head = len - width;
		struct zkl_node n = { .name = name };
		if (names_parse_seq(name + head, width, &n.seq) < 0)
			continue;
		if (names_zklockfs(name, head, &n) ||
		    names_marked(name, head, &n) ||
		    names_zookeeper(name, head, &n)) {
			*out = n;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- names we create ---------------------------------------------------- */

int names_tag_new(enum zkl_style style, char out[NAMES_TAG_MAX + 1])
{
	unsigned char b[16];
	size_t got = 0, o = 0;

	if (style != ZKL_STYLE_ZKLOCKFS && style != ZKL_STYLE_CURATOR &&
	    style != ZKL_STYLE_KAZOO)
		return -EINVAL;
	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		got += (size_t)n;
	}
	b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
	b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
	for (size_t i = 0; i < sizeof(b); i++) {
		if (style != ZKL_STYLE_KAZOO &&
		    (i == 4 || i == 6 || i == 8 || i == 10))
			out[o++] = '-';
		out[o++] = "0123456789abcdef"[b[i] >> 4];
		out[o++] = "0123456789abcdef"[b[i] & 0xf];
	}
	out[o] = '\0';
	return (int)o;
}

/* fmt (one %s, for tag) into buf: its length, -EINVAL for no fmt, or
 * -ENAMETOOLONG. */
static int names_format(char *buf, size_t size, const char *fmt,
			const char *tag)
{
	int n;

	if (!fmt)
		return -EINVAL;
	n = snprintf(buf, size, fmt, tag);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	return n;
}

int names_format_prefix(char *buf, size_t size, enum zkl_style style,
			enum names_recipe recipe, enum zkl_mode mode,
			const char *tag)
{
	static const char *const words[ZKL_STYLE_COUNT][3] = {
		[ZKL_STYLE_ZKLOCKFS] = { [ZKL_MODE_READ] = "_c_%s-read-",
					 [ZKL_MODE_WRITE] = "_c_%s-write-",
					 [ZKL_MODE_LEASE] = "_c_%s-lease-" },
		[ZKL_STYLE_CURATOR] = { [ZKL_MODE_READ] = "_c_%s-__READ__",
					[ZKL_MODE_WRITE] = "_c_%s-__WRIT__",
					[ZKL_MODE_LEASE] = "_c_%s-lease-" },
		[ZKL_STYLE_KAZOO] = { [ZKL_MODE_READ] = "%s__rlock__",
				      [ZKL_MODE_WRITE] = "%s__lock__",
				      [ZKL_MODE_LEASE] = "%s" },
	};
	static const char *const mutex[ZKL_STYLE_COUNT] = {
		[ZKL_STYLE_CURATOR] = "_c_%s-lock-",
		[ZKL_STYLE_KAZOO] = "%s__lock__",
	};
	const char *fmt = NULL;

	if (style < ZKL_STYLE_COUNT && recipe == NAMES_RECIPE_LOCK &&
	    mode <= ZKL_MODE_LEASE)
		fmt = words[style][mode];
	else if (style < ZKL_STYLE_COUNT && recipe == NAMES_RECIPE_MUTEX &&
		 mode == ZKL_MODE_WRITE)
		fmt = mutex[style];
	return names_format(buf, size, fmt, tag);
}

const char *names_data_field(const char *data, size_t len, const char *key,
			     size_t *vlen)
{
	size_t klen = strlen(key);
	const char *end = data + len;

	for (const char *line = data; line < end;) {
		const char *nl = memchr(line, '\n', (size_t)(end - line));
		const char *eol = nl ? nl : end;

		if ((size_t)(eol - line) > klen && line[klen] == ' ' &&
		    memcmp(line, key, klen) == 0) {
			*vlen = (size_t)(eol - line) - klen - 1;
			return line + klen + 1;
		}
		line = eol + 1;
	}
	return NULL;
}

/* ---- the peers' semaphore layouts -------------------------------------- */

int names_peer_dir(enum zkl_style style, enum names_peer_dir which,
		   const char *res, char out[NAMES_MAX_NODE_PATH + 1])
{
	static const char *const suffix[ZKL_STYLE_COUNT][2] = {
		[ZKL_STYLE_CURATOR] = { [NAMES_PEER_LEASES] = "/leases",
					[NAMES_PEER_LOCK] = "/locks" },
		[ZKL_STYLE_KAZOO] = { [NAMES_PEER_LEASES] = "",
				      [NAMES_PEER_LOCK] = "-__lock__" },
	};
	int n;

	if (style >= ZKL_STYLE_COUNT || !suffix[style][which])
		return -EINVAL;
	n = snprintf(out, NAMES_MAX_NODE_PATH + 1, "%s%s", res,
		     suffix[style][which]);
	return n < 0 || n > NAMES_MAX_NODE_PATH ? -ENAMETOOLONG : 0;
}

int names_parse_peer_lease(enum zkl_style style, const char *name,
			   struct zkl_node *out)
{
	size_t len = strlen(name);

	if (style == ZKL_STYLE_CURATOR) {
		if (names_parse(name, out) < 0 || out->mode != ZKL_MODE_LEASE)
			return -EINVAL;
		out->style = ZKL_STYLE_CURATOR;
		return 0;
	}
	if (style != ZKL_STYLE_KAZOO || len != 32)
		return -EINVAL;
	for (size_t i = 0; i < len; i++)
		if (!names_is_hex(name[i]))
			return -EINVAL;
	*out = (struct zkl_node){ .name = name,
				  .style = ZKL_STYLE_KAZOO,
				  .mode = ZKL_MODE_LEASE,
				  .tag = name,
				  .taglen = len };
	return 0;
}
