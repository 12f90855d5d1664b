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

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
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
	int files_failed; /* a file of ours failed to load */
	char servers[TLS_SERVERS_MAX]
		    [TLS_SERVER_LEN]; /* whose handshake failed */
	size_t nservers;
	char why[256];
	char said[TLS_SAID][256];
	size_t nsaid; /* reasons said; the last TLS_SAID kept */
} tls_seen = { .lock = PTHREAD_MUTEX_INITIALIZER };

unsigned tls_failed_servers(char *why, size_t len)
{
	unsigned n;

	pthread_mutex_lock(&tls_seen.lock);
	n = tls_seen.files_failed ? TLS_FILES_FAILED
				  : (unsigned)tls_seen.nservers;
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

/* The server a client message names ("... Socket 127.0.0.1:2281 zk
 * retcode=-15 ...", "Socket [::1]:2281"), or "". */
static void tls_server_of(const char *message, char *server, size_t len)
{
	const char *at = strstr(message, "Socket ");

	at = at ? at + strlen("Socket ") : "";
	snprintf(server, len, "%.*s", (int)strcspn(at, " "), at);
}

/* Note a failed handshake with server, or a file of ours that failed to
 * load (`ours`), and its reason: 1 if the reason is new, 2 if it was said
 * already.  tls_seen.lock held. */
static int tls_seen_add_locked(const char *server, int ours, const char *why)
{
	size_t i;

	if (ours)
		tls_seen.files_failed = 1;
	for (i = 0; i < tls_seen.nservers; i++)
		if (strcmp(tls_seen.servers[i], server) == 0)
			break;
	if (*server && i == tls_seen.nservers && i < TLS_SERVERS_MAX)
		snprintf(tls_seen.servers[tls_seen.nservers++],
			 sizeof(tls_seen.servers[0]), "%s", server);
	snprintf(tls_seen.why, sizeof(tls_seen.why), "%s", why);
	for (i = 0; i < tls_seen.nsaid && i < TLS_SAID; i++)
		if (strcmp(tls_seen.said[i], why) == 0)
			return 2;
	/* the oldest forgotten when full */
	snprintf(tls_seen.said[tls_seen.nsaid++ % TLS_SAID],
		 sizeof(tls_seen.said[0]), "%s", why);
	return 1;
}

/*
 * The client's log stream, for the messages of TLS handles.
 *
 * zookeeper_init_ssl takes no log hook, and its I/O thread may connect
 * (and fail a handshake) before zoo_set_log_callback could be called on
 * the handle it returns: such a message would go to stderr, unnoted, and
 * leave its reason in that thread's OpenSSL queue, to be blamed on the
 * next server.  A handle without a hook writes to the client's one log
 * stream (zoo_set_log_stream): this stream hands each line to the hook,
 * so every message of a TLS handle takes the same way from its first.
 */
static struct {
	pthread_once_t once;
	FILE *stream;
	/* Set by the first handle's maker, never changed: the one hook. */
	_Atomic(log_callback_fn) hook;
	char line[8192]; /* the client's messages are at most 4096 */
	size_t used;     /* written under the stream's own lock */
} tls_log = { .once = PTHREAD_ONCE_INIT };

static ssize_t tls_log_write(void *cookie, const char *buf, size_t size)
{
	(void)cookie;
	for (size_t i = 0; i < size; i++) {
		if (buf[i] != '\n') {
			tls_log.line[tls_log.used++] = buf[i];
			if (tls_log.used < sizeof(tls_log.line) - 1)
				continue;
		}
		tls_log.line[tls_log.used] = '\0';
		tls_log.used = 0;
		atomic_load (&tls_log.hook)(tls_log.line);
	}
	return (ssize_t)size;
}

static void tls_log_open(void)
{
	cookie_io_functions_t io = { .write = tls_log_write };

	tls_log.stream = fopencookie(NULL, "w", io);
	if (!tls_log.stream)
		return;
	/* Each line written by the thread that logs it, within its
	 * fprintf: fully buffered, a line could wait for another thread's
	 * flush and reach the hook there, where its OpenSSL reason is not. */
	setvbuf(tls_log.stream, NULL, _IOLBF, 0);
	zoo_set_log_stream(tls_log.stream);
}

zhandle_t *tls_handle_new(const char *hosts, const char *files,
			  watcher_fn watcher, int session_timeout_ms,
			  void *context, log_callback_fn log)
{
	log_callback_fn none = NULL;
	zhandle_t *zh;

	atomic_compare_exchange_strong(&tls_log.hook, &none, log);
	assert(atomic_load(&tls_log.hook) == log);
	pthread_once(&tls_log.once, tls_log_open);
	zh = zookeeper_init_ssl(hosts, files, watcher, session_timeout_ms, NULL,
				context, 0);
	/* Without the stream (no memory), the hook from here on. */
	if (zh && !tls_log.stream)
		zoo_set_log_callback(zh, log);
	return zh;
}

int tls_note_failure(const char *message, char *why, size_t len, char *server,
		     size_t server_len)
{
	const char *first = NULL, *known = NULL, *file;
	unsigned long e;
	int rc;

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
	/* A handshake's failure is logged from init_ssl_for_socket, as an
	 * error (the server's refusal of our certificate comes there too); a
	 * connection that broke later (a server's restart) is no TLS
	 * failure, only its queue drained. */
	if (!first || !strstr(message, "ZOO_ERROR@init_ssl_for_socket"))
		return 0;
	/* Our own files fail to load before any server is asked: name the
	 * option, from the client's message. */
	file = strstr(message, "Failed to load CA file") ? "tls_ca: "
	       : strstr(message, "Failed to load client certificate")
		       ? "tls_cert: "
	       : strstr(message, "Failed to load client private key")
		       ? "tls_key: "
	       : strstr(message, "check_private_key") ? "tls_key: "
						      : "";
	snprintf(why, len, "%s%s", file, known ? known : first);
	if (*file)
		snprintf(server, server_len, "%s", "");
	else
		tls_server_of(message, server, server_len);
	if (!*file && !*server)
		return 0; /* neither our file nor a server's fault: unknown */
	pthread_mutex_lock(&tls_seen.lock);
	rc = tls_seen_add_locked(server, *file != '\0', why);
	pthread_mutex_unlock(&tls_seen.lock);
	return rc;
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

int tls_note_failure(const char *message, char *why, size_t len, char *server,
		     size_t server_len)
{
	(void)message, (void)why, (void)len, (void)server, (void)server_len;
	return 0;
}

#endif
