/* Telling the kernel's own open (for an ioctl) from a program's: the
 * system call a thread is in, as /proc/<tid>/syscall shows it. */
#include <criterion/criterion.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "process.h"

Test(kernelopen, reads_the_system_call_number)
{
	cr_assert_eq(kernelopen_syscall_of("16 0x3 0x80086601 0x7ffd5b0e2a4c "
					   "0x0 0x0 0x0 0x7ffd5b0e2a28 "
					   "0x7f3b2b2f5b5b\n"),
		     16);
	cr_assert_eq(kernelopen_syscall_of("54 0x3 0x80046601 0xffd2c1a8 0x0 "
					   "0x0 0x0 0xffd2c178 0xf7f0b549\n"),
		     54);
	cr_assert_eq(kernelopen_syscall_of("running\n"), -1);
	cr_assert_eq(kernelopen_syscall_of("-1 0x7ffd5b0e2a28 0x0\n"), -1,
		     "blocked outside a system call");
	cr_assert_eq(kernelopen_syscall_of(""), -1);
	cr_assert_eq(kernelopen_syscall_of("16x"), -1);
	cr_assert_eq(kernelopen_syscall_of("99999999999999999999999 0x0"), -1);
}

Test(kernelopen, an_ioctl_natively_or_through_the_32_bit_gate)
{
	cr_assert(kernelopen_is_ioctl(SYS_ioctl));
	cr_assert(kernelopen_is_ioctl(54), "i386 and arm's ioctl");
	cr_assert(!kernelopen_is_ioctl(SYS_openat));
	cr_assert(!kernelopen_is_ioctl(SYS_read));
	cr_assert(!kernelopen_is_ioctl(-1));
}

Test(kernelopen, a_running_thread_or_none_is_no_ioctl)
{
	cr_assert_eq(kernelopen_in_ioctl(gettid()), 0, "this thread reads");
	cr_assert_eq(kernelopen_in_ioctl(0x7ffffff0), 0, "no such thread");
}
