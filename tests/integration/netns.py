"""Test hosts for partition tests: network namespaces made by the test,
each joined to the root namespace by a veth pair whose link-local
addresses (169.254.0.0/16) are on that pair only.

The ZooKeeper servers listen on the root end of a pair of their own (the
"server pair", never cut), which every host reaches: the root namespace
directly, a namespace through its own pair and a route over it.  A host's
daemon runs in its namespace (nsenter --net, which keeps the mount
namespace, so the mount is seen by everyone), its lock holders anywhere.
A cut sets the root end of the host's pair down: its packets are dropped,
nothing is refused, as when a cable is pulled; the daemon keeps running.
"""
import os
import subprocess
from contextlib import contextmanager

import pytest

# 169.254.N.0/24, N from the pid: two runs on one machine do not meet.
NET = f"169.254.{os.getpid() % 250 + 1}"


def _ip(*args, ns=None):
    cmd = ["ip", *args]
    if ns:
        cmd = ["nsenter", f"--net=/var/run/netns/{ns}", *cmd]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


class Host:
    """Namespace number `index` (0 is the servers' pair): its inner
    address is `.4*index+2`, its root end `.4*index+1`."""

    def __init__(self, index):
        tag = f"zk{os.getpid() % 100000}n{index}"
        self.ns = tag
        self.outer, self.inner = tag + "o", tag + "i"
        self.outer_addr = f"{NET}.{4 * index + 1}"
        self.inner_addr = f"{NET}.{4 * index + 2}"
        self.made = False

    def create(self):
        try:
            self.made = True
            _ip("netns", "add", self.ns)
            _ip("link", "add", self.outer, "type", "veth", "peer", "name",
                self.inner)
        except subprocess.CalledProcessError as e:
            # Not root, or a container without CAP_SYS_ADMIN and
            # CAP_NET_ADMIN: the test cannot make its hosts here, which
            # says nothing of zklockfs.
            self.remove()
            pytest.skip("cannot make a test host's network namespace and "
                        f"veth pair here ({' '.join(e.cmd)}: "
                        f"{e.stderr.strip()})")
        _ip("link", "set", self.inner, "netns", self.ns)
        _ip("addr", "add", self.outer_addr + "/30", "dev", self.outer)
        _ip("link", "set", self.outer, "up")
        _ip("addr", "add", self.inner_addr + "/30", "dev", self.inner,
            ns=self.ns)
        _ip("link", "set", self.inner, "up", ns=self.ns)
        _ip("link", "set", "lo", "up", ns=self.ns)
        _ip("route", "add", "default", "via", self.outer_addr, ns=self.ns)
        return self

    @property
    def prefix(self):
        """Run a command in this host's network (and only that)."""
        return ["nsenter", f"--net=/var/run/netns/{self.ns}"]

    def cut(self):
        _ip("link", "set", self.outer, "down")

    def heal(self):
        _ip("link", "set", self.outer, "up")
        # The inner end comes back with it; its route may not.
        subprocess.run(
            [*self.prefix, "ip", "route", "replace", "default", "via",
             self.outer_addr], check=False, capture_output=True)

    def remove(self):
        if not self.made:
            return
        subprocess.run(["ip", "link", "del", self.outer], check=False,
                       capture_output=True)
        subprocess.run(["ip", "netns", "del", self.ns], check=False,
                       capture_output=True)
        self.made = False


@contextmanager
def made_hosts(*indices):
    """Hosts of those numbers, created, and removed at the end."""
    hosts = [Host(i) for i in indices]
    try:
        for h in hosts:
            h.create()
        yield hosts
    finally:
        for h in hosts:
            h.remove()
