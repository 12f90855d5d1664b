"""What the TLS tests share: whether the binary under test speaks TLS, and
a ZooKeeper server that speaks only TLS, with the CA of the test's own
(harness.Pki) that signs its certificate and its clients'."""
import os
import subprocess
from contextlib import contextmanager

import pytest

from harness import Pki, ZooKeeper, zklockfs_binary


def built_with_tls():
    """Does the zklockfs under test speak TLS (-Dtls=enabled)?"""
    out = subprocess.run([zklockfs_binary(), "--version"], capture_output=True,
                         text=True, timeout=10).stdout
    assert "with TLS" in out or "without TLS" in out, out
    return "without TLS" not in out


needs_tls = pytest.mark.skipif(
    not built_with_tls(),
    reason="this zklockfs is built without TLS (meson setup -Dtls=enabled "
           "builds one with it: contrib/build-tree build)")


@contextmanager
def tls_zookeeper(address="127.0.0.1"):
    """(server, pki): a started ZooKeeper server on `address` that speaks
    only TLS, and the Pki whose CA signed its certificate and signs its
    clients'."""
    pki = Pki(parent=os.environ.get("TMPDIR"))
    server = ZooKeeper(address=address, tls=pki)
    try:
        server.start()
        yield server, pki
    finally:
        server.stop()
        pki.remove()
