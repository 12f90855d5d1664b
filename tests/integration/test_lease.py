"""Semaphores: MOUNT/<res>/limit keeps N in ZooKeeper for every host, and
MOUNT/<res>/lease takes one of N leases."""
import errno
import os
import subprocess

import pytest

from test_names_and_errors import expect_errno


def read_limit(mount, resource):
    with open(mount.path(resource, "limit")) as f:
        return f.read()


def write_limit(mount, resource, text):
    fd = os.open(mount.path(resource, "limit"), os.O_WRONLY | os.O_TRUNC)
    try:
        return os.write(fd, text.encode())
    finally:
        os.close(fd)


def test_a_limit_never_set_is_one(m1):
    assert read_limit(m1, "jobs") == "1\n"
    assert "limit" in os.listdir(m1.path("jobs"))


def test_a_limit_written_on_one_host_is_read_on_the_other(zk, base, m1, m2):
    # No znode yet for jobs (nothing locked it): the write creates it.
    # As a shell sets it: echo's one write, then close.
    subprocess.run(["sh", "-c", f"echo 3 > {m1.path('jobs', 'limit')}"],
                   check=True, timeout=30)
    assert read_limit(m2, "jobs") == "3\n"
    # A nested resource's parents are created too.
    write_limit(m2, "a/b", "4")
    assert zk.get(f"{base}/a/b")[0] == b"4"
    assert zk.get(f"{base}/jobs")[0] == b"3", "stored as decimal text"
    assert write_limit(m2, "jobs", "1000000") == 7
    assert read_limit(m1, "jobs") == "1000000\n"


@pytest.mark.parametrize("text", ["0", "-1", "abc", "1000001", "3 4",
                                  " 2", "02", "2\n\n", "1e3"])
def test_a_bad_limit_is_refused_and_changes_nothing(zk, base, m1, text):
    write_limit(m1, "jobs", "2")
    expect_errno(errno.EINVAL, write_limit, m1, "jobs", text)
    assert read_limit(m1, "jobs") == "2\n"
    assert zk.get(f"{base}/jobs")[0] == b"2"


def test_the_shell_sees_a_refused_limit_fail(m1):
    res = subprocess.run(["bash", "-c", f"echo 0 > {m1.path('jobs', 'limit')}"],
                         capture_output=True, text=True, timeout=30)
    assert res.returncode != 0
    assert "Invalid argument" in res.stderr, res.stderr


def test_a_limit_another_client_stored_is_read(zk, base, m1):
    """kazoo's Semaphore keeps max_leases in the same place, as text."""
    zk.create(f"{base}/jobs", b"5", makepath=True)
    assert read_limit(m1, "jobs") == "5\n"
    zk.set(f"{base}/jobs", b"five")
    expect_errno(errno.EIO, read_limit, m1, "jobs")
    assert "its data is not a limit" in m1.log()


def test_limit_is_no_resource_name(m1):
    expect_errno(errno.EEXIST, os.mkdir, m1.path("jobs", "limit"))
    expect_errno(errno.EINVAL, os.mkdir, m1.path("limit"))
