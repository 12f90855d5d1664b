/*
 * int80_open.c - open PATH read-only the way a 32-bit program does: through
 * the i386 system call gate (int $0x80), whose open adds no O_LARGEFILE,
 * so the daemon sees flags of exactly O_RDONLY, as for the kernel's own
 * ioctl open.  Prints the descriptor (or -errno) and exits: 0 if opened.
 * Built without PIE: the i386 gate takes 32-bit pointers, so the path is
 * copied into a static buffer below 4 GiB.
 */
#include <stdio.h>
#include <string.h>

static char path[4096];

int main(int argc, char **argv)
{
	long ret;

	if (argc != 2 || strlen(argv[1]) >= sizeof(path)) {
		fprintf(stderr, "usage: int80_open PATH\n");
		return 2;
	}
	strcpy(path, argv[1]);
	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(5L /* i386 open */), "b"(path), "c"(0L), "d"(0L)
			 : "memory");
	printf("%ld\n", ret);
	fflush(stdout);
	return ret < 0;
}
