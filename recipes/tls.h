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

/* Called with each of the client's messages, on the thread that logged
 * it: if that thread's last TLS call failed, note why (with the option
 * whose file failed to load, if the message says) (OpenSSL's reason:
 * "certificate verify failed", "tlsv13 alert certificate required"),
 * clear it, and return the reason in why[0..len) and 1, or 2 if it is
 * the reason the last failure had too; else 0. */
int tls_note_failure(const char *message, char *why, size_t len);

/* Handshakes that failed since the start, and the last one's reason. */
unsigned tls_failures(char *why, size_t len);

/* What a failure's reason (as tls_note_failure gives it) means for the
 * user, naming the option to look at: "" if nothing more is known. */
const char *tls_advice(const char *why);

#endif
