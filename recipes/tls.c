/*
 * tls.c - see tls.h.
 *
 * The ZooKeeper C client reports a failed handshake only in its log ("error
 * in ssl connect", or a failed read once the server has refused our
 * certificate) and then tries the next server, forever.  Its messages are
 * logged on its I/O thread, the thread whose OpenSSL error queue holds the
 * reason, so the reason is read there, from the message hook: the mount's
 * start can then stop with it (session.c) instead of waiting out its
 * connect timeout, and the log says it once rather than at every retry.
 */
#include "tls.h"
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#if ZKLOCKFS_TLS
#include <openssl/err.h>
#endif

/* Reasons said in the log at the error level: servers that fail for
 * different reasons in turn say each once, not at every retry. */
#define TLS_SAID 8

/* The client's log hook takes no argument: one record per process. */
static struct {
	pthread_mutex_t lock;
	unsigned failures;
	char why[256];
	char said[TLS_SAID][256];
	size_t nsaid; /* reasons said; the last TLS_SAID kept */
} tls_seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

unsigned tls_failures(char *why, size_t len)
{
	unsigned n;

	pthread_mutex_lock(&tls_seen.lock);
	n = tls_seen.failures;
	snprintf(why, len, "%s", tls_seen.why);
	pthread_mutex_unlock(&tls_seen.lock);
	return n;
}

const char *tls_advice(const char *why)
{
	/* OpenSSL's reasons, as ERR_reason_error_string spells them. */
	static const struct {
		const char *reason, *advice;
	} known[] = {
		{ "certificate verify failed",
		  ": the server's certificate is not signed by a CA in tls_ca, "
		  "or has expired" },
		{ "alert certificate required",
		  ": the server asked for a client certificate it did not get" },
		{ "alert bad certificate",
		  ": the server refused this mount's certificate (tls_cert)" },
		{ "alert certificate unknown",
		  ": the server refused this mount's certificate (tls_cert): "
		  "is it signed by a CA the server trusts?" },
		{ "alert unknown ca",
		  ": the server does not trust the CA that signed tls_cert" },
		{ "alert certificate expired", ": tls_cert has expired" },
		{ "wrong version number",
		  ": the server does not speak TLS there: name the "
		  "ensemble's secureClientPort" },
		{ "packet length too long",
		  ": the server does not speak TLS there: name the "
		  "ensemble's secureClientPort" },
		{ "unexpected eof while reading",
		  ": the server hung up in the handshake: is it the "
		  "ensemble's secureClientPort?" },
		{ "bad decrypt",
		  ": tls_key is encrypted and tls_key_password_file does not "
		  "hold its password" },
		{ "key values mismatch", ": tls_key is not tls_cert's key" },
	};

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strstr(why, known[i].reason))
			return known[i].advice;
	return "";
}

#if ZKLOCKFS_TLS

const int tls_built_in = 1;

zhandle_t *tls_handle_new(const char *hosts, const char *files,
			  watcher_fn watcher, int session_timeout_ms,
			  void *context, log_callback_fn log)
{
	zhandle_t *zh = zookeeper_init_ssl(
		hosts, files, watcher, session_timeout_ms, NULL, context, 0);

	/* zookeeper_init_ssl takes no log hook: a message logged before
	 * this line goes to the client's stream (stderr), and a handshake
	 * failed that early is noted at its next try. */
	if (zh)
		zoo_set_log_callback(zh, log);
	return zh;
}

int tls_note_failure(const char *message, char *why, size_t len)
{
	const char *first = NULL, *known = NULL, *file;
	unsigned long e;
	int again;

	/* The queue holds the cause first, then what it made fail ("bad
	 * decrypt", then "PEM lib"): say the first that tls_advice knows,
	 * else the cause. */
	while ((e = ERR_get_error()) != 0) {
		const char *reason = ERR_reason_error_string(e);
		if (!reason)
			continue;
		if (!first)
			first = reason;
		if (!known && *tls_advice(reason))
			known = reason;
	}
	/* A handshake's failure is logged from init_ssl_for_socket (the
	 * server's refusal of our certificate comes there too); a connection
	 * that broke later (a server's restart) is no TLS failure, only
	 * its queue drained. */
	if (!first || !strstr(message, "init_ssl_for_socket"))
		return 0;
	/* Our own files fail to load before any server is asked: name the
	 * option, from the client's message. */
	file = strstr(message, "Failed to load CA file") ? "tls_ca: "
	       : strstr(message, "Failed to load client certificate")
		       ? "tls_cert: "
	       : strstr(message, "Failed to load client private key")
		       ? "tls_key: "
		       : "";
	snprintf(why, len, "%s%s", file, known ? known : first);
	pthread_mutex_lock(&tls_seen.lock);
	tls_seen.failures++;
	snprintf(tls_seen.why, sizeof(tls_seen.why), "%s", why);
	again = 0;
	for (size_t i = 0; i < tls_seen.nsaid && i < TLS_SAID && !again; i++)
		again = strcmp(tls_seen.said[i], why) == 0;
	if (!again) /* the oldest forgotten when full */
		snprintf(tls_seen.said[tls_seen.nsaid++ % TLS_SAID],
			 sizeof(tls_seen.said[0]), "%s", why);
	pthread_mutex_unlock(&tls_seen.lock);
	return again ? 2 : 1;
}

#else

const int tls_built_in = 0;

zhandle_t *tls_handle_new(const char *hosts, const char *files,
			  watcher_fn watcher, int session_timeout_ms,
			  void *context, log_callback_fn log)
{
	(void)hosts, (void)files, (void)watcher, (void)session_timeout_ms;
	(void)context, (void)log;
	errno = ENOTSUP;
	return NULL;
}

int tls_note_failure(const char *message, char *why, size_t len)
{
	(void)message, (void)why, (void)len;
	return 0;
}

#endif
