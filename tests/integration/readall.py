"""What the test children share: reading a lock file as cat does."""
import os


def read_all(fd):
    """Read to end of file: each pass gets the lock file's whole text."""
    chunks = []
    while True:
        chunk = os.read(fd, 4096)
        if not chunk:
            return b"".join(chunks).decode()
        chunks.append(chunk)
