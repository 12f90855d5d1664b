"""A TCP proxy on loopback between a mount and ZooKeeper, for tests that
need a connection cut at a chosen step: hold() stops forwarding what the
client sends (its requests wait in the proxy, in flight as far as the
client knows), cut() drops every connection with whatever was held, and
while refusing() new connections are closed at once, as an unreachable
server would be.  One thread, bounded waits, loopback only."""
import os
import select
import socket
import threading


class TcpProxy:
    def __init__(self, target_port):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(16)
        self.port = self.listener.getsockname()[1]
        self.pairs = []  # [client, server]
        self.holding = False
        self.refusing = False
        self.done = False
        self.lock = threading.Lock()
        self.wake_r, self.wake_w = os.pipe()
        self.idle = threading.Condition(self.lock)
        self.generation = 0  # counts passes of the loop
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    @property
    def connect(self):
        return f"127.0.0.1:{self.port}"

    def _poke(self):
        """Wake the loop and wait until it has gone round once, so that a
        change of state is in force when the call returns."""
        with self.lock:
            seen = self.generation
            os.write(self.wake_w, b"x")
            ok = self.idle.wait_for(lambda: self.generation > seen, 5)
        assert ok, "the proxy's loop does not answer"

    def hold(self):
        with self.lock:
            self.holding = True
        self._poke()

    def cut(self, refuse=True):
        """Drop every connection (what was held is lost); keep refusing
        new ones until accept()."""
        with self.lock:
            self.refusing = refuse
            self.holding = False
            self._close_pairs_locked()
        self._poke()

    def accept(self):
        with self.lock:
            self.refusing = False
        self._poke()

    def connections(self):
        with self.lock:
            return len(self.pairs)

    def stop(self):
        with self.lock:
            self.done = True
        os.write(self.wake_w, b"x")
        self.thread.join(10)
        with self.lock:
            self._close_pairs_locked()
        self.listener.close()
        os.close(self.wake_r)
        os.close(self.wake_w)

    def _close_pairs_locked(self):
        for pair in self.pairs:
            for s in pair:
                try:
                    s.close()
                except OSError:
                    pass
        self.pairs = []

    def _accept_one(self):
        client, _ = self.listener.accept()
        if self.refusing:
            client.close()
            return
        try:
            server = socket.create_connection(self.target, timeout=5)
        except OSError:
            client.close()
            return
        self.pairs.append([client, server])

    def _forward(self, src, pair):
        try:
            data = src.recv(65536)
        except OSError:
            data = b""
        dst = pair[1] if src is pair[0] else pair[0]
        if data:
            try:
                dst.sendall(data)
                return
            except OSError:
                pass
        self.pairs.remove(pair)
        for s in pair:
            s.close()

    def _run(self):
        while True:
            with self.lock:
                if self.done:
                    return
                readers = [self.listener, self.wake_r]
                for client, server in self.pairs:
                    readers.append(server)
                    if not self.holding:
                        readers.append(client)
                self.generation += 1
                self.idle.notify_all()
            ready, _, _ = select.select(readers, [], [], 0.5)
            with self.lock:
                for r in ready:
                    if r == self.wake_r:
                        os.read(self.wake_r, 64)
                    elif r is self.listener:
                        self._accept_one()
                    else:
                        pair = next((p for p in self.pairs if r in p), None)
                        if pair and not (self.holding and r is pair[0]):
                            self._forward(r, pair)
