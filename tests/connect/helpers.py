"""Small helpers shared by the Spark Connect tests."""

import contextlib
import io
import os
import socket
import subprocess
import time
from pathlib import Path

TPCH_TABLES = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"]


def show_text(df, *args, **kwargs) -> str:
    """What `df.show(*args, **kwargs)` prints."""
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        df.show(*args, **kwargs)
    return buffer.getvalue()


def tuples(df) -> list:
    """The rows of `df` as plain tuples, in the order they arrive."""
    return [tuple(row) for row in df.collect()]


def sorted_tuples(df) -> list:
    """The rows of `df` as tuples, sorted (None first) for order-free comparison."""
    return sorted(tuples(df), key=lambda row: [(v is not None, v) for v in row])


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class AetherServer:
    """An `aether serve` process started by a test, stopped with `stop()`."""

    def __init__(self, binary: str, *args: str, timeout: float = 120.0):
        self.port = free_port()
        self.log_path = Path(os.environ.get("TMPDIR", "/tmp")) / f"aether-serve-{self.port}.log"
        self._log = open(self.log_path, "w+b")
        self.process = subprocess.Popen(
            [binary, "serve", "--port", str(self.port), *args],
            stdout=self._log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while b"listening on" not in self.log_path.read_bytes():
            if self.process.poll() is not None or time.monotonic() > deadline:
                output = self.log_path.read_text(errors="replace")
                self.stop()
                raise RuntimeError(f"aether serve did not start:\n{output}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


def lines(*text_lines: str) -> str:
    """Joins lines into the text a command prints: each line ends with a newline."""
    return "".join(line + "\n" for line in text_lines)
