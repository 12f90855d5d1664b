/*
 * tls.h - the mount's connection to ZooKeeper over TLS: a handle that
 * speaks TLS to the ensemble's secure ports with the mount's certificate,
 * and what a failed handshake says.
 *
 * Debian's libzookeeper-mt is built without OpenSSL; a zklockfs built with
 * -Dtls=enabled links the same client version built with it
 * (subprojects/).  In a build without, tls_handle_new fails with ENOTSUP,
 * and the command line refuses the TLS options before that (fs/opts.c).
 */
#ifndef ZKL_TLS_H
#define ZKL_TLS_H

#include <stddef.h>
#include <zookeeper/zookeeper.h>

/* 1 in a build that speaks TLS, else 0. */
extern const int tls_built_in;

/* A handle as zookeeper_init2 makes one, but speaking TLS: `files` is the
 * client's "CA,CERT,KEY[,KEY_PASSWORD]" (no part with a comma).  Its
 * messages go to `log`.  NULL with errno set on failure. */
zhandle_t *tls_handle_new(const char *hosts, const char *files,
			  watcher_fn watcher, int session_timeout_ms,
			  void *context, log_callback_fn log);

/* Room for a server as the client names it: "[v6 address]:port". */
#define TLS_SERVER_LEN 64
/* Servers told apart: an ensemble's addresses, with room to spare. */
#define TLS_SERVERS_MAX 64

/* Called with each of the client's messages, on the thread that logged
 * it: if the message says a TLS connection failed, note why with the
 * thread's OpenSSL reason ("certificate verify failed", "tlsv13 alert
 * certificate required"), prefixed with the option whose file failed to
 * load if that was it ("tls_key: bad decrypt"); put the reason in
 * why[0..len), the server in server[0..server_len) ("" for our own
 * files), and return 1, or 2 if an earlier failure gave the same reason;
 * else 0.  The thread's OpenSSL queue is emptied either way. */
int tls_note_failure(const char *message, char *why, size_t len, char *server,
		     size_t server_len);

/* What tls_failed_servers says once a file of ours failed to load: no
 * server can take us. */
#define TLS_FILES_FAILED ((unsigned)-1)

/* How many servers (addresses) have failed a TLS connection since the
 * start, or TLS_FILES_FAILED; the last failure's reason in why. */
unsigned tls_failed_servers(char *why, size_t len);

/* What a failure's reason (as tls_note_failure gives it) means for the
 * user, naming the option to look at: "" if nothing more is known. */
const char *tls_advice(const char *why);

#endif
