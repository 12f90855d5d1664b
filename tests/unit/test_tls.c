/* What a failed TLS connection says (recipes/tls.c): the reason the
 * thread's OpenSSL queue holds, the server the client's message names, and
 * how many servers have failed, which decides when the start gives up. */
#include <criterion/criterion.h>
#include <string.h>

#include "config.h"
#include "tls.h"

#if ZKLOCKFS_TLS
#include <openssl/err.h>
#include <openssl/ssl.h>
#endif

Test(tls, the_advice_names_the_option_to_look_at)
{
	cr_assert(strstr(tls_advice("certificate verify failed"), "tls_ca"));
	cr_assert(strstr(tls_advice("tlsv13 alert certificate required"),
			 "client certificate"));
	cr_assert(
		strstr(tls_advice("sslv3 alert bad certificate"), "tls_cert"));
	cr_assert(
		strstr(tls_advice("wrong version number"), "secureClientPort"));
	cr_assert(strstr(tls_advice("tls_key: bad decrypt"),
			 "tls_key_password_file"));
	cr_assert_str_eq(tls_advice("something OpenSSL says one day"), "");
}

#if ZKLOCKFS_TLS

/* As the client does before its first handshake: reasons have names. */
static void load_reasons(void)
{
	OPENSSL_init_ssl(OPENSSL_INIT_LOAD_SSL_STRINGS |
				 OPENSSL_INIT_LOAD_CRYPTO_STRINGS,
			 NULL);
}

/* tls_note_failure of `message`, with `reason` queued first if not 0,
 * as the client's I/O thread would have it: its answer, why and server
 * in the test's buffers (256 and TLS_SERVER_LEN bytes). */
static int noted(int lib, int reason, const char *message, char *why,
		 char *server)
{
	if (reason)
		ERR_raise(lib, reason);
	return tls_note_failure(message, why, 256, server, TLS_SERVER_LEN);
}

/* The client's message for a handshake refused by the server at
 * `server`, with OpenSSL's reason in the queue, as its I/O thread logs it. */
static int refused_by(const char *server, int reason, char *why, char *named)
{
	char message[256];

	snprintf(message, sizeof(message),
		 "2026-11-29 12:00:00,000:1(0x7f):ZOO_ERROR@init_ssl_for_"
		 "socket@2850: Socket %s zk retcode=-15, errno=0(Success): "
		 "error in ssl connect",
		 server);
	return noted(ERR_LIB_SSL, reason, message, why, named);
}

Test(tls, each_server_counts_once_and_each_reason_is_said_once,
     .init = load_reasons)
{
	char why[256], server[TLS_SERVER_LEN];

	cr_assert_eq(tls_failed_servers(why, sizeof(why)), 0);
	cr_assert_eq(refused_by("127.0.0.2:2281",
				SSL_R_CERTIFICATE_VERIFY_FAILED, why, server),
		     1);
	cr_assert_str_eq(why, "certificate verify failed");
	cr_assert_str_eq(server, "127.0.0.2:2281");
	/* The same server again, and another with the same reason: the
	 * reason was said, and only servers told apart count. */
	cr_assert_eq(refused_by("127.0.0.2:2281",
				SSL_R_CERTIFICATE_VERIFY_FAILED, why, server),
		     2);
	cr_assert_eq(tls_failed_servers(why, sizeof(why)), 1);
	cr_assert_eq(refused_by("[::1]:2281", SSL_R_CERTIFICATE_VERIFY_FAILED,
				why, server),
		     2);
	cr_assert_str_eq(server, "[::1]:2281", "the port kept: %s", server);
	cr_assert_eq(tls_failed_servers(why, sizeof(why)), 2);
	cr_assert_eq(ERR_peek_error(), 0, "the queue is left empty");
}

Test(tls, a_broken_connection_is_no_tls_failure_but_its_queue_is_emptied,
     .init = load_reasons)
{
	char why[256], server[TLS_SERVER_LEN];

	cr_assert_eq(noted(ERR_LIB_SSL, SSL_R_UNEXPECTED_EOF_WHILE_READING,
			   "ZOO_ERROR@handle_socket_error_msg@2100: Socket "
			   "127.0.0.1:2281 zk retcode=-4: failed while "
			   "receiving",
			   why, server),
		     0);
	cr_assert_eq(ERR_peek_error(), 0);
	cr_assert_eq(tls_failed_servers(why, sizeof(why)), 0);
	/* Nor the handshake's own news, with a stale reason queued. */
	cr_assert_eq(noted(ERR_LIB_SSL, SSL_R_CERTIFICATE_VERIFY_FAILED,
			   "ZOO_INFO@init_ssl_for_socket@2750: FIPS mode is "
			   "OFF ",
			   why, server),
		     0);
	cr_assert_eq(tls_failed_servers(why, sizeof(why)), 0);
	/* Nor a message with an empty queue. */
	cr_assert_eq(noted(0, 0,
			   "ZOO_ERROR@init_ssl_for_socket@2850: Socket "
			   "127.0.0.1:2281 zk retcode=-15",
			   why, server),
		     0);
}

Test(tls, a_file_of_ours_that_fails_to_load_fails_every_server,
     .init = load_reasons)
{
	char why[256], server[TLS_SERVER_LEN];

	cr_assert_eq(noted(ERR_LIB_PEM, PEM_R_NO_START_LINE,
			   "ZOO_ERROR@init_ssl_for_socket@2790: Socket "
			   "127.0.0.1:2281 zk retcode=-15, errno=22(Invalid "
			   "argument): Failed to load client private key "
			   "from k.pem",
			   why, server),
		     1);
	cr_assert_str_eq(why, "tls_key: no start line");
	cr_assert_str_eq(server, "", "our file, not the server's fault");
	cr_assert_eq(tls_failed_servers(why, sizeof(why)), TLS_FILES_FAILED);
}

#else

Test(tls, a_build_without_tls_notes_nothing)
{
	char why[256], server[TLS_SERVER_LEN];

	cr_assert_eq(tls_built_in, 0);
	cr_assert_eq(tls_note_failure("ZOO_ERROR@init_ssl_for_socket@1: x", why,
				      sizeof(why), server, sizeof(server)),
		     0);
	cr_assert_eq(tls_failed_servers(why, sizeof(why)), 0);
}

#endif
