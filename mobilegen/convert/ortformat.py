"""Make ORT-format files reproducible.

onnxruntime writes the kernel-type-string resolver of an ``.ort`` (the table that maps each op to its
type-constraint arguments) from a hash map, so the same model converted twice gives files that are
logically identical but laid out differently. A handoff package must be byte-identical across runs,
so after conversion the front of the FlatBuffer (root table, resolver) is rebuilt in sorted order and
the model subtree behind it is kept byte for byte. Field numbers follow ORT's schema
``onnxruntime/core/flatbuffers/schema/ort.fbs`` (InferenceSession: 0 ort_version, 1 model,
3 kernel_type_str_resolver; KernelTypeStrResolver: 0 op_kernel_type_str_args; OpIdKernelTypeStrArgsEntry:
0 op_id, 1 kernel_type_str_args; KernelTypeStrArgsEntry: 0 kernel_type_str, 1 args; ArgTypeAndIndex:
0 arg_type (int8), 1 index (uint32)).
"""

from __future__ import annotations

import errno
import hashlib
import mmap
import os
import struct
from pathlib import Path

Buffer = bytes | mmap.mmap  # a whole file read into memory, or mapped read-only

IDENTIFIER = b"ORTM"


class _Reader:
    def __init__(self, data: Buffer) -> None:
        self.d = data

    def u16(self, p: int) -> int:
        return int(struct.unpack_from("<H", self.d, p)[0])

    def u32(self, p: int) -> int:
        return int(struct.unpack_from("<I", self.d, p)[0])

    def vtable(self, table: int) -> int:
        return table - int(struct.unpack_from("<i", self.d, table)[0])

    def field(self, table: int, index: int) -> int:
        """Absolute position of field ``index`` of ``table`` (0 when absent)."""
        vt = self.vtable(table)
        slot = 4 + 2 * index
        if slot >= self.u16(vt):
            return 0
        off = self.u16(vt + slot)
        return table + off if off else 0

    def ref(self, table: int, index: int) -> int:
        p = self.field(table, index)
        return p + self.u32(p) if p else 0

    def string(self, p: int) -> str:
        n = self.u32(p)
        return self.d[p + 4 : p + 4 + n].decode("utf-8")

    def tables(self, vec: int) -> list[int]:
        if not vec:
            return []
        n = self.u32(vec)
        return [vec + 4 + 4 * i + self.u32(vec + 4 + 4 * i) for i in range(n)]


Resolver = list[tuple[str, list[tuple[str, list[tuple[int, int]]]]]]


def _read_resolver(r: _Reader, res: int) -> Resolver:
    out: Resolver = []
    for entry in r.tables(r.ref(res, 0)):
        op_id = r.string(r.ref(entry, 0))
        args = []
        for kts in r.tables(r.ref(entry, 1)):
            name = r.string(r.ref(kts, 0))
            pairs = []
            for ai in r.tables(r.ref(kts, 1)):
                pt, pi = r.field(ai, 0), r.field(ai, 1)
                pairs.append((struct.unpack_from("<b", r.d, pt)[0] if pt else 0, r.u32(pi) if pi else 0))
            args.append((name, pairs))
        out.append((op_id, args))
    return out


def canonicalize(data: bytes) -> bytes:
    """The same ``.ort`` with its front part rebuilt deterministically (returned unchanged when its layout
    is not the one this function knows: model subtree behind root table and resolver)."""
    front = _canonical_front(data)
    if front is None:
        return data
    head, start = front
    return head + data[start:]


def canonicalize_file(src: Path, dest: Path) -> str:
    """:func:`canonicalize` from file to file without holding the model in memory: the front part is read
    through a read-only map (only its pages are touched), the model subtree behind it (the weights) is
    copied file to file by the kernel (:func:`_copy_range`). ``dest`` gets the same bytes
    ``canonicalize(src.read_bytes())`` returns; returns their sha256, hashed from ``src``'s map (the
    bytes copied), not from ``dest`` read again."""
    with open(src, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if not size:
            open(dest, "wb").close()
            return hashlib.sha256(b"").hexdigest()
        with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            front = _canonical_front(data)
            head, start = front if front is not None else (b"", 0)
            try:
                with open(dest, "wb") as out:
                    out.write(head)
                    out.flush()
                    _copy_range(f.fileno(), out.fileno(), start, size - start)
            except OSError as err:  # a failed write names its file (a full disk says which one)
                if err.filename is None:
                    err.filename = str(dest)
                raise
            digest = hashlib.sha256(head)
            digest.update(memoryview(data)[start:])  # hashlib lets go of Python's lock for it
    return digest.hexdigest()


_COPY_CHUNK = 16 << 20
# copy_file_range's refusals that mean "not between these files": copy through Python instead
_NO_KERNEL_COPY = (errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM, errno.ETXTBSY)


def _copy_range(src_fd: int, dest_fd: int, start: int, length: int) -> None:
    """``length`` bytes of ``src_fd`` from ``start`` appended to ``dest_fd`` (at its current end). With
    ``os.copy_file_range`` the kernel copies them page cache to page cache: on Linux ext4 a 1.2 GB
    subtree takes 0.35 s instead of 3 s through Python's buffers (benchmarks/results/large-model.md). Where
    the kernel refuses (another file system, an old kernel, no such call) it is copied in chunks."""
    offset = os.lseek(dest_fd, 0, os.SEEK_CUR)
    done = 0
    kernel_copy = getattr(os, "copy_file_range", None)
    while kernel_copy is not None and done < length:
        try:
            n = kernel_copy(src_fd, dest_fd, length - done, start + done, offset + done)
        except OSError as err:
            if err.errno not in _NO_KERNEL_COPY or done:
                raise
            break
        if n == 0:  # the source ended early: the file changed under us
            raise OSError(errno.EIO, "the converted model changed while it was copied")
        done += n
    if done == length:
        return
    os.lseek(src_fd, start + done, os.SEEK_SET)
    os.lseek(dest_fd, offset + done, os.SEEK_SET)
    while done < length and (chunk := os.read(src_fd, min(_COPY_CHUNK, length - done))):
        view = memoryview(chunk)
        while view:  # a write may take less than it is given
            view = view[os.write(dest_fd, view) :]
        done += len(chunk)
    if done != length:
        raise OSError(errno.EIO, "the converted model changed while it was copied")


def _canonical_front(data: Buffer) -> tuple[bytes, int] | None:
    """The rebuilt front part (root table, resolver) and where the old buffer's model subtree starts:
    the canonical file is ``front + data[start:]``; None when the layout is not the one known here.

    The builder never reads the subtree: only its length matters (offsets into it are distances from
    the end of the buffer, alignment is taken modulo 8), so the builder holds a stand-in of a few bytes
    instead of the weights, and every offset into the subtree is shifted by the bytes left out (a
    multiple of 8; a shifted offset may be negative, the relative offset written is the same). The front
    it writes is byte for byte the one a builder holding the whole subtree writes."""
    import flatbuffers

    if len(data) < 16 or data[4:8] != IDENTIFIER:
        return None
    r = _Reader(data)
    root = r.u32(0)
    model = r.ref(root, 1)
    res = r.ref(root, 3)
    version = r.ref(root, 0)
    if not model or not res:
        return None
    start = min(model, r.vtable(model))  # the model subtree was built first: it is the back of the buffer
    if res >= start or version and version < start and version > res:
        return None
    resolver = sorted(_read_resolver(r, res), key=lambda e: e[0])
    tail_len = len(data) - start
    refs = [len(data) - p for p in (model, version) if p >= start]  # offsets into the subtree (from the end)
    left_out = tail_len // 8 * 8  # a multiple of 8: alignment is unchanged
    while left_out and any(d == left_out for d in refs):  # an offset of 0 would read as "field absent"
        left_out -= 8
    stand_in = tail_len - left_out
    b = flatbuffers.Builder(stand_in + 1024)
    b.minalign = 8
    b.Prep(1, stand_in)
    b.head -= stand_in

    def from_end(pos: int) -> int:  # a position in the old buffer as a builder offset (distance from the end)
        return len(data) - pos - left_out

    version_off = from_end(version) if version >= start else (b.CreateString(r.string(version)) if version else 0)
    def table_vector(offsets: list[int]) -> int:
        b.StartVector(4, len(offsets), 4)
        for o in reversed(offsets):
            b.PrependUOffsetTRelative(o)
        return int(b.EndVector())

    def keyed_entry(key: str, vector: int) -> int:  # {0: key string, 1: vector of tables}
        s = b.CreateString(key)
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(1, vector, 0)
        b.PrependUOffsetTRelativeSlot(0, s, 0)
        return int(b.EndObject())

    entries = []
    for op_id, args in resolver:
        kts_offs = []
        for name, pairs in sorted(args, key=lambda a: a[0]):
            ai_offs = []
            for arg_type, index in pairs:
                b.StartObject(2)
                b.PrependUint32Slot(1, index, 0)
                b.PrependInt8Slot(0, arg_type, 0)
                ai_offs.append(b.EndObject())
            kts_offs.append(keyed_entry(name, table_vector(ai_offs)))
        entries.append(keyed_entry(op_id, table_vector(kts_offs)))
    vec = table_vector(entries)
    b.StartObject(1)
    b.PrependUOffsetTRelativeSlot(0, vec, 0)
    res_off = b.EndObject()
    b.StartObject(4)
    b.PrependUOffsetTRelativeSlot(3, res_off, 0)
    b.PrependUOffsetTRelativeSlot(1, from_end(model), 0)
    if version:
        b.PrependUOffsetTRelativeSlot(0, version_off, 0)
    session = b.EndObject()
    b.Finish(session, file_identifier=IDENTIFIER)
    out = b.Output()
    return bytes(out[: len(out) - stand_in]), start


def resolver_entries(data: bytes) -> Resolver:
    """The resolver's logical content (for tests: canonicalization must not change it)."""
    r = _Reader(data)
    root = r.u32(0)
    return sorted(_read_resolver(r, r.ref(root, 3)), key=lambda e: e[0])


def format_version(data: Buffer) -> int | None:
    """The InferenceSession's ``ort_version`` (field 0, a decimal string such as "6"); None if unreadable."""
    if len(data) < 16 or data[4:8] != IDENTIFIER:
        return None
    try:
        r = _Reader(data)
        text = r.ref(r.u32(0), 0)
        return int(r.string(text)) if text else None
    except (struct.error, UnicodeDecodeError, ValueError, IndexError):
        return None


def summary(data: bytes) -> tuple[dict[str, int], list[tuple[str, str]]]:
    """Opset imports ({domain: version}) and the (domain, op_type) of every main-graph node of an ``.ort``
    (schema fields: Model 1 opset_import, 7 graph; Graph 2 nodes; Node 2 domain, 5 op_type;
    OperatorSetId 0 domain, 1 version)."""
    r = _Reader(data)
    model = r.ref(r.u32(0), 1)
    opsets: dict[str, int] = {}
    for entry in r.tables(r.ref(model, 1)):
        dom = r.ref(entry, 0)
        ver = r.field(entry, 1)
        opsets[(r.string(dom) if dom else "") or "ai.onnx"] = struct.unpack_from("<q", data, ver)[0] if ver else 0
    nodes = []
    graph = r.ref(model, 7)
    for node in r.tables(r.ref(graph, 2)) if graph else []:
        dom, op = r.ref(node, 2), r.ref(node, 5)
        nodes.append((r.string(dom) if dom else "", r.string(op) if op else "?"))
    return opsets, nodes
