/*
 * resolve.c - are the ZooKeeper servers' names known? (see resolve.h)
 */
#include "resolve.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "log.h"

/* NULL if host:port resolves, else why not. */
static const char *resolve_one(const char *spec, size_t len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	const char *colon = NULL;
	char host[NI_MAXHOST], port[NI_MAXSERV];
	int rc;

	for (size_t i = 0; i < len; i++)
		if (spec[i] == ':')
			colon = spec + i;
	/* opts_servers wrote the list: every entry has a host and a port */
	if (!colon || (size_t)(colon - spec) >= sizeof(host) ||
	    (size_t)(spec + len - colon - 1) >= sizeof(port))
		return "not host:port";
	snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
	snprintf(port, sizeof(port), "%.*s", (int)(spec + len - colon - 1),
		 colon + 1);
	rc = getaddrinfo(host, port, &hints, &res);
	if (rc == 0) {
		freeaddrinfo(res);
		return NULL;
	}
	return rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc);
}

int resolve_check(const char *hosts, char *err, size_t errlen)
{
	const char *end = hosts + strlen(hosts);
	char *list = NULL;
	size_t listlen = 0, found = 0, failed = 0;
	FILE *out = open_memstream(&list, &listlen);
	int rc = 0;

	if (!out) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	for (const char *p = hosts; p < end;) {
		const char *comma = strchr(p, ',');
		size_t len = comma ? (size_t)(comma - p) : (size_t)(end - p);
		const char *why = resolve_one(p, len);

		if (why)
			fprintf(out, "%s'%.*s': %s", failed++ ? "; " : "",
				(int)len, p, why);
		else
			found++;
		p += len + 1;
	}
	if (fclose(out) != 0) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (found == 0) {
		/* A message longer than err ends in "...". */
		if ((size_t)snprintf(err, errlen,
				     "cannot resolve any ZooKeeper server: %s",
				     list) >= errlen &&
		    errlen > 4)
			strcpy(err + errlen - 4, "...");
		rc = -ENOENT;
	} else if (failed) {
		log_msg(LOG_WARNING,
			"cannot resolve %s; using the other servers", list);
	}
	free(list);
	return rc;
}
