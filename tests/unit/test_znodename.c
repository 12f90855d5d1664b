/* File names <-> znode names: what ZooKeeper refuses is escaped, the rest
 * is kept, and the mapping is one-to-one. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tree.h"

static const char *enc(const char *name, size_t len)
{
	static char out[ZNODENAME_MAX + 1];

	cr_assert_geq(znodename_encode(name, len, out, sizeof(out)), 0,
		      "encoding failed");
	return out;
}

static const char *dec(const char *z)
{
	static char out[256];
	int rc = znodename_decode(z, out, sizeof(out));

	return rc < 0 ? NULL : out;
}

#define ENCODES(name, z) cr_assert_str_eq(enc(name, strlen(name)), z)

Test(znodename, what_zookeeper_accepts_is_its_own_name)
{
	ENCODES("deploy", "deploy");
	ENCODES("über-ünïcode", "über-ünïcode");
	ENCODES("日本語", "日本語");
	ENCODES("a b~!@#$^&*()", "a b~!@#$^&*()");
	ENCODES("\xc2\xa0", "\xc2\xa0");         /* U+00A0, first accepted */
	ENCODES("\xed\x9f\xbf", "\xed\x9f\xbf"); /* U+D7FF */
	ENCODES("\xef\xa4\x80", "\xef\xa4\x80"); /* U+F900 */
	ENCODES("\xef\xbf\xaf", "\xef\xbf\xaf"); /* U+FFEF */
}

Test(znodename, what_zookeeper_refuses_is_escaped_byte_by_byte)
{
	ENCODES("a\tb", "a%09b");
	ENCODES("\x01\x1f\x7f", "%01%1F%7F");
	ENCODES("\xc2\x80\xc2\x9f", "%C2%80%C2%9F"); /* U+0080, U+009F */
	ENCODES("\xf0\x9f\x9a\x80", "%F0%9F%9A%80"); /* U+1F680, beyond FFFF */
	ENCODES("\xed\xa0\x80", "%ED%A0%80");        /* U+D800 */
	ENCODES("\xef\xa3\xbf", "%EF%A3%BF");        /* U+F8FF */
	ENCODES("\xef\xbf\xb0", "%EF%BF%B0");        /* U+FFF0 */
	ENCODES("\xef\xbf\xbd", "%EF%BF%BD");        /* U+FFFD */
	ENCODES("caf\xe9", "caf%E9");                /* Latin-1, not UTF-8 */
	ENCODES("\xe0\x80\x80", "%E0%80%80");        /* overlong NUL */
	ENCODES("\xc0\xaf", "%C0%AF");               /* overlong '/' */
	ENCODES("\xc3", "%C3");                      /* cut short */
	ENCODES("\xc3(", "%C3(");
}

Test(znodename, a_percent_is_escaped_only_where_it_would_read_as_escape)
{
	ENCODES("50%", "50%");
	ENCODES("a%20b", "a%20b"); /* a space is never escaped */
	ENCODES("%41", "%41");
	ENCODES("%e9", "%e9"); /* lower-case is never an escape */
	ENCODES("%E9", "%25E9");
	ENCODES("%25", "%2525");
	ENCODES("%%E9", "%%25E9");
	ENCODES("%", "%");
	ENCODES("%E", "%E");
}

Test(znodename, decoding_gives_the_file_name_back)
{
	static const char *const names[] = {
		"deploy",       "a\tb",   "\xf0\x9f\x9a\x80go",
		"caf\xe9",      "50%",    "%E9",
		"%25",          "%%E9",   "%\xe9",
		"%E\xe9",       "\xe9%",  "%2",
		"%41",          "a%2525", "\x01",
		"\xff\xfe\xfd", "\xc3(",
	};

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		const char *z = enc(names[i], strlen(names[i]));
		const char *back = dec(z);
		cr_assert(back != NULL, "'%s' does not decode", z);
		cr_assert_str_eq(back, names[i]);
	}
}

Test(znodename, every_short_name_round_trips)
{
	/* All 1- and 2-byte names, and 3-byte ones built around '%'. */
	static const unsigned char some[] = { 0x01, 0x09, 0x1f, ' ',  '%',
					      '2',  '5',  'A',  'E',  'e',
					      0x7f, 0x80, 0xc3, 0xa9, 0xff };
	char name[4], z[ZNODENAME_MAX + 1], back[256];

	for (unsigned a = 1; a < 256; a++) {
		for (unsigned b = 0; b < 256; b++) {
			if (a == '/' || b == '/')
				continue;
			name[0] = (char)a;
			name[1] = (char)b;
			name[2] = '\0';
			size_t len = b ? 2 : 1;
			cr_assert_geq(znodename_encode(name, len, z, sizeof(z)),
				      0);
			cr_assert_eq(znodename_accepted_len(z, strlen(z)),
				     strlen(z), "ZooKeeper refuses '%s'", z);
			cr_assert_geq(znodename_decode(z, back, sizeof(back)),
				      0, "'%s' does not decode", z);
			cr_assert(memcmp(back, name, len + 1) == 0,
				  "%02x %02x came back different", a, b);
		}
	}
	for (size_t i = 0; i < sizeof(some); i++)
		for (size_t j = 0; j < sizeof(some); j++)
			for (size_t k = 0; k < sizeof(some); k++) {
				name[0] = (char)some[i];
				name[1] = (char)some[j];
				name[2] = (char)some[k];
				name[3] = '\0';
				cr_assert_geq(znodename_encode(name, 3, z,
							       sizeof(z)),
					      0);
				cr_assert_geq(znodename_decode(z, back,
							       sizeof(back)),
					      0, "'%s' does not decode", z);
				cr_assert_str_eq(back, name);
			}
}

Test(znodename, a_znode_name_no_file_name_maps_to_is_not_decoded)
{
	/* Another tool's percent-encoded UTF-8: "caf%C3%A9" would read as
	 * "café", whose znode is "café" itself. */
	cr_assert_null(dec("caf%C3%A9"));
	cr_assert_null(dec("a%25b")); /* "a%b" is its own znode name */
	cr_assert_str_eq(dec("a%25E9"), "a%E9");
	cr_assert_str_eq(dec("caf%E9"), "caf\xe9");
	cr_assert_str_eq(dec("a%20b"), "a%20b");
}

Test(znodename, sizes_are_checked)
{
	char name[256], out[ZNODENAME_MAX + 1], small[4];

	memset(name, 0xff, 255);
	name[255] = '\0';
	cr_assert_eq(znodename_encode(name, 255, out, sizeof(out)),
		     ZNODENAME_MAX);
	cr_assert_eq(znodename_encode(name, 255, out, sizeof(out) - 1),
		     -ENAMETOOLONG);
	cr_assert_eq(znodename_encode("\xff", 1, small, 4), 3);
	cr_assert_eq(znodename_encode("\xff", 1, small, 3), -ENAMETOOLONG);
	cr_assert_eq(znodename_encode("abcd", 4, small, 4), -ENAMETOOLONG);
	cr_assert_eq(znodename_decode("abcd", small, 4), -ENAMETOOLONG);
	cr_assert_eq(znodename_decode("%FF%FF%FF", small, 4), 3);
}

Test(znodename, accepted_length_stops_at_the_first_refused_byte)
{
	cr_assert_eq(znodename_accepted_len("/locks/db", 9), 9);
	cr_assert_eq(znodename_accepted_len("/a\x01", 3), 2);
	cr_assert_eq(znodename_accepted_len("/\xc3\xa9x\xf0\x9f\x9a\x80", 8),
		     4);
	cr_assert_eq(znodename_accepted_len("\xc3", 1), 0, "cut short");
}
