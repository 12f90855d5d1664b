/*
 * fake_fuse.c - see fake_fuse.h.
 */
#include "fake_fuse.h"

#include <criterion/criterion.h>
#include <string.h>

#include "fake_zk.h"

struct zkl_fs fake_fs;
struct fuse_ctx fake_ctx;
static int inside_registration;

/* What happens on the completion thread while the request `registering`
 * has its interrupt callback set (once). */
struct fake_req *registering;
void (*while_registering)(void);
struct fake_req *registered;
void (*after_registering)(struct fake_req *r);

void fuse_req_interrupt_func(fuse_req_t req, fuse_interrupt_func_t func,
			     void *data)
{
	struct fake_req *r = (struct fake_req *)req;

	if (func && r == registering) {
		registering = NULL;
		while_registering();
	}
	r->func = func;
	r->data = data;
	if (r->interrupted && func) {
		/* As libfuse does: with the request's lock held. */
		inside_registration = 1;
		func(req, data);
		inside_registration = 0;
	}
	if (func && r == registered) {
		registered = NULL;
		after_registering(r);
	}
}

static void fake_reply(fuse_req_t req, int err)
{
	struct fake_req *r = (struct fake_req *)req;

	cr_assert_not(inside_registration,
		      "replied inside fuse_req_interrupt_func: libfuse frees "
		      "the request while it still holds its lock");
	r->replies++;
	r->err = err;
	r->func = NULL;
}

int fuse_reply_err(fuse_req_t req, int err)
{
	fake_reply(req, err);
	return 0;
}

/* What happens on other threads while an open's grant is being replied
 * to (once). */
void (*while_replying_open)(void);

int fuse_reply_open(fuse_req_t req, const struct fuse_file_info *fi)
{
	void (*meanwhile)(void) = while_replying_open;

	((struct fake_req *)req)->fh = fi->fh;
	while_replying_open = NULL;
	if (meanwhile)
		meanwhile();
	fake_reply(req, 0);
	return 0;
}

const struct fuse_ctx *fuse_req_ctx(fuse_req_t req)
{
	(void)req;
	return &fake_ctx;
}

void *fuse_req_userdata(fuse_req_t req)
{
	(void)req;
	return &fake_fs;
}

/* The kernel's interrupt reaching libfuse after the callback is set. */
void fake_interrupt(struct fake_req *r)
{
	r->interrupted = 1;
	cr_assert(r->func, "no interrupt callback registered");
	r->func((fuse_req_t)r, r->data);
}

void fake_mount(uint64_t *dir_ino, uint64_t *write_ino)
{
	fs_context_init(&fake_fs);
	strcpy(fake_fs.hostname, "h");
	fake_fs.session = fake_session();
	cr_assert_eq(tree_init(&fake_fs.tree, "/b"), 0);
	holdcache_init(&fake_fs.holders);
	cr_assert_eq(tree_lookup(&fake_fs.tree, FUSE_ROOT_ID, "r", dir_ino), 0);
	cr_assert_eq(tree_lookup(&fake_fs.tree, *dir_ino, "write", write_ino),
		     0);
	memset(&fake_ctx, 0, sizeof(fake_ctx));
}

void fake_unmount(void)
{
	fake_session_free(fake_fs.session);
	holdcache_destroy(&fake_fs.holders);
	tree_destroy(&fake_fs.tree);
	fs_context_destroy(&fake_fs);
}
