"""The harness's own judgement of sanitizer reports: a leak with a frame
of ours fails a test, a leak made wholly inside a library does not."""
from harness import leaks_of_ours, sanitizer_problems

OURS = """\
==1==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 24 byte(s) in 1 object(s) allocated from:
    #0 0x7f in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:69
    #1 0x56 in info_finish ../fs/ops_info.c:74
    #2 0x7f  (/lib/x86_64-linux-gnu/libzookeeper_mt.so.2+0xb495)

Indirect leak of 907 byte(s) in 1 object(s) allocated from:
    #0 0x7f in __interceptor_realloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:85
    #1 0x7f in _IO_mem_finish libio/memstream.c:131
    #2 0x56  (/work/main/build-asan/fs/zklockfs+0xce33f)

SUMMARY: AddressSanitizer: 931 byte(s) leaked in 2 allocation(s).
"""

LIBFUSE_ONLY = """\
==1==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 128 byte(s) in 1 object(s) allocated from:
    #0 0x7f in __interceptor_calloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:77
    #1 0x7f  (/lib/x86_64-linux-gnu/libfuse3.so.3+0x17c1e)
    #2 0x7f  (/lib/x86_64-linux-gnu/libfuse3.so.3+0x1a9b3)
    #3 0x7f in start_thread nptl/pthread_create.c:442

SUMMARY: AddressSanitizer: 128 byte(s) leaked in 1 allocation(s).
"""


def test_a_leak_with_a_frame_of_ours_is_reported_symbolized_or_not():
    found = leaks_of_ours(OURS)
    assert len(found) == 2, found
    assert "info_finish" in found[0] and "zklockfs+0x" in found[1]
    assert sanitizer_problems(OURS)


def test_a_leak_made_wholly_inside_a_library_is_not_ours():
    assert leaks_of_ours(LIBFUSE_ONLY) == []
    assert sanitizer_problems(LIBFUSE_ONLY) == ""


def test_asan_ubsan_and_tsan_errors_are_always_reported():
    for text in ("==1==ERROR: AddressSanitizer: heap-use-after-free",
                 "../fs/x.c:1:2: runtime error: signed integer overflow",
                 "WARNING: ThreadSanitizer: data race (pid=1)"):
        assert sanitizer_problems(text), text
