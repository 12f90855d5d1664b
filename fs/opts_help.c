/*
 * opts_help.c - the usage text of --help (opts.h): every option, its
 * default and what it does.  Keep it in step with opts.c's table and with
 * zklockfs(8).
 */
#include "opts.h"

#include <stdio.h>

void opts_print_help(const char *progname)
{
	printf("usage: %s [options] CONNECT MOUNTPOINT\n"
	       "\n"
	       "Mount ZooKeeper locks as files: open MOUNTPOINT/<resource>/write\n"
	       "blocks until the exclusive lock is held, .../read until a shared\n"
	       "lock is held; the last close releases it.  <resource>/holders\n"
	       "lists who holds and waits, MOUNTPOINT/.status this mount's\n"
	       "session; see zklockfs(8).\n\n"
	       "CONNECT is host:port[,host:port...][/base/path]; the base path\n"
	       "defaults to %s and is created if missing.\n\noptions:\n"
	       "    -h, --help               print this help and exit\n"
	       "    -V, --version            print the version and exit\n"
	       "    -f                       stay in the foreground, log to stderr\n"
	       "    -d, -o debug             foreground, log every request\n"
	       "    -s                       accepted; has no effect\n"
	       "    -o session_timeout=SECS  ZooKeeper session timeout (default %d)\n"
	       "    -o connect_timeout=SECS  give up if no server answers at start\n"
	       "                             (default %d)\n"
	       "    -o on_lost=log|signal[:SIG]\n"
	       "                             when a held lock is lost: only log\n"
	       "                             it (default), or also send SIG\n"
	       "                             (default TERM) to the holder's\n"
	       "                             process group\n"
	       "    -o jeopardy_margin_ms=MS when ZooKeeper stops answering, every\n"
	       "                             held lock is declared lost this long\n"
	       "                             before the server may end the session\n"
	       "                             (default: a tenth of the timeout the\n"
	       "                             server granted, at least 500; under a\n"
	       "                             quarter of it)\n"
	       "    -o dialect=zklockfs|curator|kazoo\n"
	       "                             whose names the lock nodes this\n"
	       "                             mount creates have, so that Curator\n"
	       "                             or kazoo services see them (every\n"
	       "                             dialect waits behind all of them)\n"
	       "    -o on_revoke=log|signal[:SIG]\n"
	       "                             when a held lock is asked to let go\n"
	       "                             (MOUNT/<res>/revoke, Curator's\n"
	       "                             Revoker): log, or also send SIG\n"
	       "                             (default TERM) to its holder\n"
	       "    -o reentrant             a lock asked again by its holder's\n"
	       "                             process or a descendant of it is\n"
	       "                             granted at once, and held until the\n"
	       "                             last of these holds ends\n"
	       "    -o auth_file=PATH        authenticate to ZooKeeper as the\n"
	       "                             user:password in PATH (digest) and\n"
	       "                             give the nodes created to it alone\n"
	       "    -o metrics_file=PATH     keep PATH (absolute) a copy of\n"
	       "                             MOUNT/.metrics, for the node\n"
	       "                             exporter's textfile collector\n"
	       "    -o uid=N,gid=N           owner of the files (default: the\n"
	       "                             daemon's user and group)\n"
	       "    -o umask=OCTAL           mode bits to take away from the files\n"
	       "                             (0666) and directories (0777); the\n"
	       "                             default leaves 0666 and 0755\n"
	       "    -o allow_other           let other users use the mount\n"
	       "    -o default_permissions   let the kernel check file modes\n"
	       "    -o ro                    refused: locks need writing\n",
	       progname, OPTS_DEFAULT_BASE, OPTS_DEFAULT_SESSION_TIMEOUT,
	       OPTS_DEFAULT_CONNECT_TIMEOUT);
}
