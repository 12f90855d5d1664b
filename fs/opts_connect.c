/*
 * opts_connect.c - CONNECT: the server list and the base path, checked
 * before anything is sent (see opts.h).
 */
#include "opts.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "znodename.h"

/* One server "host:port" or "[v6addr]:port" of CONNECT, `len` bytes at
 * `spec`: appended to out as the ZooKeeper client reads it ("host:port";
 * it takes the last ':' as the port's, so an IPv6 address goes without its
 * brackets).  Returns 0 or -EINVAL with a message in err. */
static int opts_server(const char *spec, size_t len, FILE *out, char *err,
		       size_t errlen)
{
	const char *host = spec, *colon = NULL, *port;
	size_t hostlen;
	char portbuf[8];
	unsigned long num;

	if (len > 0 && spec[0] == '[') {
		const char *close = memchr(spec, ']', len);
		if (!close || close + 1 == spec + len || close[1] != ':')
			goto bad;
		host = spec + 1;
		hostlen = (size_t)(close - host);
		colon = close + 1;
	} else {
		for (size_t i = 0; i < len; i++)
			if (spec[i] == ':')
				colon = spec + i;
		if (!colon)
			goto bad;
		hostlen = (size_t)(colon - spec);
	}
	port = colon + 1;
	if (hostlen == 0) {
		snprintf(err, errlen,
			 "server '%.*s': no host name before the port",
			 (int)len, spec);
		return -EINVAL;
	}
	if ((size_t)(spec + len - port) >= sizeof(portbuf))
		goto bad;
	memcpy(portbuf, port, (size_t)(spec + len - port));
	portbuf[spec + len - port] = '\0';
	if (opts_parse_number(portbuf, 10, 1, 65535, &num) < 0) {
		snprintf(err, errlen,
			 "server '%.*s': invalid port '%s' (1 to 65535)",
			 (int)len, spec, portbuf);
		return -EINVAL;
	}
	fprintf(out, "%.*s:%lu", (int)hostlen, host, num);
	return 0;
bad:
	snprintf(err, errlen,
		 "server '%.*s': expected host:port or [IPv6 address]:port",
		 (int)len, spec);
	return -EINVAL;
}

int opts_servers(const char *spec, size_t len, char **hosts, char *err,
		 size_t errlen)
{
	char *text = NULL;
	size_t textlen = 0;
	FILE *out = open_memstream(&text, &textlen);
	const char *end = spec + len;
	int rc = 0;

	if (!out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (const char *p = spec; rc == 0 && p <= end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		const char *stop = comma ? comma : end;

		if (p != spec)
			fputc(',', out);
		rc = opts_server(p, (size_t)(stop - p), out, err, errlen);
		p = stop + 1;
	}
	if (fclose(out) != 0 && rc == 0) {
		snprintf(err, errlen, "out of memory");
		rc = -ENOMEM;
	}
	if (rc < 0) {
		free(text);
		return rc;
	}
	*hosts = text;
	return 0;
}

int opts_check_base(const char *b, char *err, size_t errlen)
{
	size_t blen = strlen(b), ok = znodename_accepted_len(b, blen);
	const char *why = NULL;

	if (blen > OPTS_MAX_BASE) {
		snprintf(err, errlen, "base path is %zu bytes long, at most %d",
			 blen, OPTS_MAX_BASE);
		return -EINVAL;
	}
	if (b[0] != '/' || blen < 2)
		why = "must be absolute and not '/'";
	else if (b[blen - 1] == '/' || strstr(b, "//"))
		why = "has an empty component or a trailing '/'";
	else if (strstr(b, "/./") || strstr(b, "/../") ||
		 (blen >= 2 && strcmp(b + blen - 2, "/.") == 0) ||
		 (blen >= 3 && strcmp(b + blen - 3, "/..") == 0))
		why = "has a '.' or '..' component (ZooKeeper refuses them)";
	else if (strcmp(b, "/zookeeper") == 0 ||
		 strncmp(b, "/zookeeper/", 11) == 0)
		why = "is inside /zookeeper, ZooKeeper's own tree";
	if (!why && ok < blen) {
		snprintf(err, errlen,
			 "base path has byte 0x%02x at offset %zu, which "
			 "ZooKeeper refuses in a path (control characters, "
			 "characters past U+FFFF and bytes that are not UTF-8)",
			 (unsigned char)b[ok], ok);
		return -EINVAL;
	}
	if (why) {
		snprintf(err, errlen, "base path '%s' %s", b, why);
		return -EINVAL;
	}
	return 0;
}

int opts_split_connect(const char *connect, char **hosts, char **base,
		       char *err, size_t errlen)
{
	const char *slash = strchr(connect, '/');
	size_t hlen = slash ? (size_t)(slash - connect) : strlen(connect);
	const char *b = slash ? slash : OPTS_DEFAULT_BASE;

	if (hlen == 0) {
		snprintf(err, errlen,
			 "CONNECT '%s' names no server "
			 "(expected host:port[,...][/path])",
			 connect);
		return -EINVAL;
	}
	if (opts_check_base(b, err, errlen) < 0)
		return -EINVAL;
	if (opts_servers(connect, hlen, hosts, err, errlen) < 0)
		return -EINVAL;
	*base = strdup(b);
	if (!*base) {
		free(*hosts);
		*hosts = NULL;
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}
