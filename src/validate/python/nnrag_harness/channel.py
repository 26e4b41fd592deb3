# The protocol of a harness worker with its parent (pool.ts; a worker for its zygotes):
# nonce-framed requests read by Channel, answers carrying the nonce, and frame() to
# write a request. Below worker.py and zygote.py, which both speak it.
import os

from nnrag_harness.procs import _dumps, _loads, close_quietly


NONCE_LEN = 32
MADV_WIPEONFORK = 18  # <linux/mman.h>, Linux 4.14; not exported by the mmap module


class Channel(object):
    """A worker's end of the protocol with its parent (pool.ts; a worker for its
    zygotes). Requests arrive framed as NONCE (32 hex characters) + payload length
    (8 hex digits) + JSON, read unbuffered; every progress and result line answers with
    the nonce of its request and the parent accepts no line without it, so a line
    written by anyone else cannot answer for any request. The nonce is read straight into
    a private page the kernel wipes in forked children (MADV_WIPEONFORK), so no candidate
    ever holds the nonce of its own request, and a finished request's nonce is dead."""

    def __init__(self, rfd, wfd):
        import mmap

        self.rfd, self.wfd = rfd, wfd
        self.page = mmap.mmap(-1, mmap.PAGESIZE, flags=mmap.MAP_PRIVATE)
        try:
            self.page.madvise(MADV_WIPEONFORK)
        except (AttributeError, OSError, ValueError):
            pass  # kernel before 4.14: a child sees its own request's nonce, no other
        self.nonce = memoryview(self.page)[:NONCE_LEN]

    def _fill(self, view):
        got = 0
        while got < len(view):
            try:
                n = os.readv(self.rfd, [view[got:]])
            except InterruptedError:
                continue
            if n == 0:
                return False
            got += n
        return True

    def read(self):
        """The next request (a dict; {} when unreadable), or None at the end of input."""
        head = bytearray(8)
        if not self._fill(self.nonce) or not self._fill(memoryview(head)):
            return None
        try:
            n = int(head.decode("ascii"), 16)
        except ValueError:
            return None
        data = bytearray(n)
        if not self._fill(memoryview(data)):
            return None
        try:
            msg = _loads(data.decode("utf-8", "replace"))
        except ValueError:
            return {}
        return msg if isinstance(msg, dict) else {}

    def send(self, obj):
        obj.pop("nonce", None)
        body = _dumps(obj, default=repr).encode("utf-8", "replace")
        if obj.get("type") in ("progress", "result", "extended") and body.startswith(b"{"):
            parts = [b'{"nonce":"', self.nonce, b'",' + body[1:] + b"\n"]
        else:
            parts = [body + b"\n"]
        while parts:
            try:
                n = os.writev(self.wfd, parts)
            except InterruptedError:
                continue
            while parts and n >= len(parts[0]):
                n -= len(parts[0])
                parts.pop(0)
            if parts and n:
                parts[0] = memoryview(parts[0])[n:]

    def close(self):
        close_quietly(self.rfd, self.wfd)


def frame(nonce, msg):
    """A request as Channel.read expects it (used towards a zygote)."""
    data = _dumps(msg).encode("utf-8")
    return nonce + ("%08x" % len(data)).encode("ascii") + data
