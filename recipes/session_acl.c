/*
 * session_acl.c - the permissions the mount relies on.
 *
 * At start, a probe child of the base path, created with the mount's ACL,
 * listed and deleted, tells whether the credentials (or their absence) may
 * do what locking does there, and which permission is missing if not: so
 * that wrong credentials fail the start instead of every open later.
 *
 * With -o auth_file or -o x509_acl, zklockfs(8) promises that other
 * clients can neither read nor delete the mount's nodes.  ZooKeeper checks a delete against
 * the parent's ACL, so the base path and every resource znode must be the
 * credentials' alone: the base is checked at start, a resource the first
 * time the session lists it (queue.c), and a znode whose ACL lets anyone
 * else in is refused with the fix.
 */
#include "internal.h"
#include "names.h"
#include "zkerr.h"
#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <syslog.h>

/* perms as zkCli writes them: "cdrwa". */
static void session_acl_perms(int32_t perms, char out[6])
{
	/* Not static: the client's ZOO_PERM_* are variables. */
	const struct {
		int32_t bit;
		char c;
	} letters[] = { { ZOO_PERM_CREATE, 'c' },
			{ ZOO_PERM_DELETE, 'd' },
			{ ZOO_PERM_READ, 'r' },
			{ ZOO_PERM_WRITE, 'w' },
			{ ZOO_PERM_ADMIN, 'a' } };
	size_t n = 0;

	for (size_t i = 0; i < sizeof(letters) / sizeof(letters[0]); i++)
		if (perms & letters[i].bit)
			out[n++] = letters[i].c;
	out[n] = '\0';
}

/* Is id one of the identities ZooKeeper knows this mount by? */
static int session_acl_is_ours(const struct zkl_session *s, const struct Id *id)
{
	const char *ours = strcmp(id->scheme, "digest") == 0 ? s->identity
			   : strcmp(id->scheme, "x509") == 0 ? s->x509_identity
							     : NULL;

	return ours && strcmp(id->id, ours) == 0;
}

int session_acl_foreign(const struct zkl_session *s,
			const struct ACL_vector *acl, char *out, size_t size)
{
	for (int32_t i = 0; acl && i < acl->count; i++) {
		const struct ACL *e = &acl->data[i];
		char perms[6];

		if (e->perms == 0 || session_acl_is_ours(s, &e->id))
			continue;
		session_acl_perms(e->perms, perms);
		snprintf(out, size, "%s:%s:%s", e->id.scheme, e->id.id, perms);
		return 1;
	}
	return 0;
}

void session_acl_fix(const struct zkl_session *s, const char *path, char *out,
		     size_t size)
{
	char digest[256] = "", x509[256] = "";

	if (s->auth)
		snprintf(digest, sizeof(digest), "digest:%s:cdrwa",
			 s->identity ? s->identity : "USER:HASH");
	if (s->x509_acl)
		snprintf(x509, sizeof(x509), "x509:%s:cdrwa",
			 s->x509_identity ? s->x509_identity : "SUBJECT");
	snprintf(out, size, "zkCli.sh setAcl %s %s%s%s", path, digest,
		 digest[0] && x509[0] ? "," : "", x509);
}

int session_acl_no_x509(const struct zkl_session *s, const char *path,
			char *err, size_t errlen)
{
	(void)s;
	snprintf(err, errlen,
		 "cannot create %s: ZooKeeper knows this mount by no identity "
		 "it can give nodes to (-o x509_acl): its servers must ask "
		 "for the client's certificate (ssl.clientAuth=need)",
		 path);
	return -EACCES;
}

/* What a failed step of the probe means, for the message: `what` the
 * mount could not do, for want of permission `perm` if ZooKeeper says so. */
static int session_probe_failed(const struct zkl_session *s, int rc,
				const char *what, const char *perm, char *err,
				size_t errlen)
{
	if (rc == ZNOAUTH)
		snprintf(err, errlen,
			 "%s: ZooKeeper does not let %s %s there (no %s "
			 "permission in its ACL): %s",
			 s->base,
			 s->auth       ? "the credentials of -o auth_file"
			 : s->x509_acl ? "the certificate of -o tls_cert"
				       : "a client without credentials",
			 what, perm,
			 s->auth       ? "check the user and password, or use "
					 "another base path"
			 : s->x509_acl ? "check the certificate's subject, or "
					 "use another base path"
				       : "pass the credentials with -o "
					 "auth_file=PATH, or use another base "
					 "path");
	else if (rc == ZINVALIDACL && s->x509_acl)
		return session_acl_no_x509(s, s->base, err, errlen);
	else
		snprintf(err, errlen, "%s: cannot %s there: %s", s->base, what,
			 zerror(rc));
	return zkerr_errno(rc);
}

/* With credentials: the identities ZooKeeper gives them, from the ACL of
 * the probe node created with CREATOR_ALL.  Returns 0 or -errno. */
static int session_learn_identity(struct zkl_session *s, const char *probe,
				  char *err, size_t errlen)
{
	struct ACL_vector acl = { 0 };
	struct Stat st;
	int rc = zoo_get_acl(s->zh, probe, &acl, &st);

	if (rc != ZOK)
		return session_probe_failed(s, rc, "read an ACL", "read", err,
					    errlen);
	for (int32_t i = 0; i < acl.count; i++) {
		const struct Id *id = &acl.data[i].id;
		char **slot = strcmp(id->scheme, "digest") == 0 ? &s->identity
			      : strcmp(id->scheme, "x509") == 0 && s->x509_acl
				      ? &s->x509_identity
				      : NULL;
		if (slot && !*slot)
			*slot = strdup(id->id);
	}
	deallocate_ACL_vector(&acl);
	if ((s->auth && !s->identity) || (s->x509_acl && !s->x509_identity)) {
		snprintf(err, errlen, "%s: no %s identity in the ACL of %s",
			 s->base, s->auth && !s->identity ? "digest" : "x509",
			 probe);
		return -EIO;
	}
	if (s->x509_identity)
		log_msg(LOG_INFO,
			"the nodes this mount creates are the certificate's "
			"(x509:%s)",
			s->x509_identity);
	return 0;
}

/* With credentials: the base must be theirs alone. */
static int session_check_base_acl(struct zkl_session *s, char *err,
				  size_t errlen)
{
	struct ACL_vector acl = { 0 };
	char foreign[256], fix[NAMES_MAX_NODE_PATH + 128];
	struct Stat st;
	int rc = zoo_get_acl(s->zh, s->base, &acl, &st);
	int open;

	if (rc != ZOK)
		return session_probe_failed(s, rc, "read an ACL", "read", err,
					    errlen);
	open = session_acl_foreign(s, &acl, foreign, sizeof(foreign));
	deallocate_ACL_vector(&acl);
	if (!open)
		return 0;
	session_acl_fix(s, s->base, fix, sizeof(fix));
	snprintf(err, errlen,
		 "%s is not the credentials' alone: its ACL also grants %s, "
		 "so other clients could add or delete lock nodes there; fix "
		 "it (%s) or use another base path",
		 s->base, foreign, fix);
	return -EACCES;
}

/* Does the server make containers (ZooKeeper 3.5.3 and later)?  One with
 * an ephemeral child, both deleted at once: if the daemon dies before,
 * the child goes with the session and the server reaps the emptied
 * container.  One that never had a child the server keeps (a start that
 * died in the round trip between the two creates): the next start deletes
 * it (session_clean_probes).  Not in one transaction: the C client
 * asserts on a multi that creates a container.
 * Without containers resource znodes are persistent (session.c), and the
 * log says what that costs. */
static void session_probe_containers(struct zkl_session *s, const char *probe)
{
	char parent[NAMES_MAX_NODE_PATH + 80], child[sizeof(parent) + 2];
	int rc;

	snprintf(parent, sizeof(parent), "%s-c", probe);
	snprintf(child, sizeof(child), "%s/x", parent);
	rc = zoo_create(s->zh, parent, "", 0, s->acl, ZOO_CONTAINER, NULL, 0);
	/* Only a server that does not know the request has no containers;
	 * any other failure (a connection lost just now) says nothing of
	 * the server, which is most likely 3.5.3 or later. */
	s->containers = rc != ZUNIMPLEMENTED;
	if (rc == ZUNIMPLEMENTED) {
		log_msg(LOG_WARNING,
			"ZooKeeper made no container znode under %s (%s; they "
			"came with ZooKeeper 3.5.3): resource znodes are made "
			"persistent, and stay after their last lock",
			s->base, zerror(rc));
		return;
	}
	if (rc != ZOK) {
		log_msg(LOG_WARNING,
			"cannot try a container znode under %s (%s): resource "
			"znodes are made as containers all the same",
			s->base, zerror(rc));
		return;
	}
	/* ZNONODE: another start's clean-up took it first; nothing left. */
	if (zoo_create(s->zh, child, "", 0, s->acl, ZOO_EPHEMERAL, NULL, 0) ==
	    ZOK)
		(void)zoo_delete(s->zh, child, -1);
	(void)zoo_delete(s->zh, parent, -1); /* else reaped, as said */
}

/* Delete the probe containers of starts that died between a probe's two
 * creates (session_probe_containers): empty ones only (ZNOTEMPTY: another
 * start's, in use).  names: the base's children. */
static void session_clean_probes(struct zkl_session *s,
				 const struct String_vector *names)
{
	static const char prefix[] = ".zklockfs-probe-";
	char path[NAMES_MAX_NODE_PATH + 80];

	for (int i = 0; i < names->count; i++) {
		const char *name = names->data[i];
		size_t len = strlen(name);

		if (strncmp(name, prefix, sizeof(prefix) - 1) != 0 ||
		    len < sizeof(prefix) + 1 ||
		    strcmp(name + len - 2, "-c") != 0 ||
		    snprintf(path, sizeof(path), "%s/%s", s->base, name) >=
			    (int)sizeof(path))
			continue;
		(void)zoo_delete(s->zh, path, -1);
	}
}

int session_check_base(struct zkl_session *s, char *err, size_t errlen)
{
	struct zkl_link notify;
	char probe[NAMES_MAX_NODE_PATH + 64];
	struct String_vector children = { 0 };
	struct Stat st;
	unsigned char r[8];
	int rc;

	if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r))
		memset(r, 0, sizeof(r));
	/* A name no resource can have (it starts with '.'), ephemeral: it
	 * goes with the session if the delete never comes. */
	snprintf(probe, sizeof(probe), "%s/.zklockfs-probe-%02x%02x%02x%02x",
		 s->base, r[0], r[1], r[2], r[3]);
	rc = zoo_create2(s->zh, probe, "", 0, s->acl, ZOO_EPHEMERAL, NULL, 0,
			 &st);
	if (rc != ZOK)
		return session_probe_failed(s, rc, "create nodes", "create",
					    err, errlen);
	/* The server's clock, before any lock node tells it (holders). */
	session_enter(s, &notify);
	session_note_server_time_locked(s, st.ctime);
	session_leave(s, &notify);
	rc = s->owned ? session_learn_identity(s, probe, err, errlen) : 0;
	if (rc == 0) {
		int zrc = zoo_get_children(s->zh, s->base, 0, &children);
		if (zrc == ZOK)
			session_clean_probes(s, &children);
		deallocate_String_vector(&children);
		if (zrc != ZOK)
			rc = session_probe_failed(s, zrc, "list the children",
						  "read", err, errlen);
	}
	{
		int zrc = zoo_delete(s->zh, probe, -1);
		if (zrc != ZOK && rc == 0)
			rc = session_probe_failed(s, zrc, "delete nodes",
						  "delete", err, errlen);
	}
	if (rc == 0 && s->owned)
		rc = session_check_base_acl(s, err, errlen);
	if (rc == 0 && s->dialect != ZKL_STYLE_KAZOO &&
	    !s->persistent_resources)
		session_probe_containers(s, probe);
	return rc;
}
