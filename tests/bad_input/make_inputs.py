#!/usr/bin/env python3
# make_inputs.py: writes the crafted binary fixtures of the bad-input suite
# into configs/: .scw jobs with one field out of range (valid CRC, so the
# field decoder sees them), damaged headers, and Chakra ET protobuf streams
# (varint-delimited messages) with bad lengths, sizes and times. Run from
# anywhere; the outputs are committed, so the suite needs no Python:
#   python3 tests/bad_input/make_inputs.py
# Base jobs: tests/fuzz/corpus-scw/{kineto-small,cpu-small}.scw (docs/SCW.md).
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "configs")
BASE = os.path.join(HERE, "..", "fuzz", "corpus-scw")


def write(name, data):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(data)


# ------------------------------------------------------------------ .scw

def sections(img):
    """(tag, offset of the section's body, length) of every section."""
    out, pos = [], 32
    while pos < len(img):
        tag = img[pos:pos + 4]
        (ln,) = struct.unpack_from("<Q", img, pos + 8)
        out.append((tag, pos + 16, ln))
        pos += 16 + ln
    return out


def fix(img):
    """Payload length and CRC-32 recomputed (the header's fields 16 and 24)."""
    img = bytearray(img)
    struct.pack_into("<Q", img, 16, len(img) - 32)
    struct.pack_into("<I", img, 24, zlib.crc32(bytes(img[32:])) & 0xFFFFFFFF)
    return bytes(img)


def rank_layout(img):
    """Offsets in the first RANK section: header fields, op 0, shape 0."""
    for tag, off, ln in sections(img):
        if tag == b"RANK":
            nstreams, nops, ndeps = struct.unpack_from("<III", img, off + 32)
            ops = off + 44 + 16 * nstreams
            deps = ops + 64 * nops
            shapes = deps + 4 * ndeps + 4
            return {"rank": off, "ops": ops, "nops": nops, "deps": deps, "ndeps": ndeps,
                    "shapes": shapes, "nshapes": struct.unpack_from("<I", img, deps + 4 * ndeps)[0],
                    "sec": off - 16, "len": ln}
    raise SystemExit("no RANK section")


def job_off(img):
    for tag, off, ln in sections(img):
        if tag == b"JOB ":
            return off
    raise SystemExit("no JOB section")


def patched(img, fmt, at, value, crc=True):
    img = bytearray(img)
    struct.pack_into(fmt, img, at, value)
    return fix(img) if crc else bytes(img)


def first_op(img, kind):
    L = rank_layout(img)
    for k in range(L["nops"]):
        if img[L["ops"] + 64 * k + 58] == kind:
            return L["ops"] + 64 * k
    raise SystemExit("no op of kind %d" % kind)


def scw_fixtures():
    kin = open(os.path.join(BASE, "kineto-small.scw"), "rb").read()
    cpu = open(os.path.join(BASE, "cpu-small.scw"), "rb").read()
    L = rank_layout(kin)
    op0 = L["ops"]
    r = L["rank"]
    j = job_off(kin)
    write("scw_dur_int64_max.scw", patched(kin, "<q", op0, 2**63 - 1))
    write("scw_dur_over_work_max.scw", patched(kin, "<q", op0, 2**50 + 1))
    write("scw_dur_negative.scw", patched(kin, "<q", op0, -5))
    write("scw_start_over.scw", patched(kin, "<q", op0 + 8, 2**62))
    write("scw_start_below.scw", patched(kin, "<q", op0 + 8, -2))
    write("scw_flops_inf.scw", patched(kin, "<d", op0 + 16, float("inf")))
    write("scw_flops_nan.scw", patched(kin, "<d", op0 + 16, float("nan")))
    write("scw_flops_huge.scw", patched(kin, "<d", op0 + 16, 1e30))
    write("scw_flops_negative.scw", patched(kin, "<d", op0 + 16, -1.0))
    coll = first_op(kin, 3)
    write("scw_bytes_huge.scw", patched(kin, "<d", coll + 24, 1.2e158))
    write("scw_bytes_over.scw", patched(kin, "<d", coll + 24, 2.0**50 * 2))
    write("scw_bytes_negative.scw", patched(kin, "<d", coll + 24, -8.0))
    write("scw_iterations_zero.scw", patched(kin, "<q", r + 16, 0))
    write("scw_iterations_huge.scw", patched(kin, "<q", r + 16, 2**40))
    write("scw_span_negative.scw", patched(kin, "<q", r + 24, -5))
    write("scw_streams_huge.scw", patched(kin, "<I", r + 32, 70000))
    write("scw_ops_huge.scw", patched(kin, "<I", r + 36, 2**25))
    write("scw_deps_huge.scw", patched(kin, "<I", r + 40, 2**27))
    write("scw_rank_out_of_range.scw", patched(kin, "<q", r, 2))
    write("scw_world_zero.scw", patched(kin, "<q", j, 0))
    write("scw_world_huge.scw", patched(kin, "<q", j, 2**21))
    write("scw_ranks_over_world.scw", patched(kin, "<I", j + 8, 3))
    write("scw_kind_unknown.scw", patched(kin, "<B", op0 + 58, 200))
    write("scw_stream_out_of_range.scw", patched(kin, "<H", op0 + 56, 999))
    write("scw_group_out_of_range.scw", patched(kin, "<I", coll + 44, 77))
    write("scw_peer_out_of_range.scw", patched(kin, "<i", op0 + 48, 5))
    write("scw_iter_out_of_range.scw", patched(kin, "<I", op0 + 52, 9))
    write("scw_dep_out_of_range.scw", patched(kin, "<I", L["deps"], 10**6))
    write("scw_coll_unknown.scw", patched(kin, "<B", coll + 59, 77))
    write("scw_shape_index_out_of_range.scw", patched(kin, "<I", op0 + 60, 5))
    # An op depending on itself: op 0's first dependency made 0 (op 0 has none
    # in the kineto job; use the first op that has one).
    for k in range(L["nops"]):
        o = L["ops"] + 64 * k
        off, n = struct.unpack_from("<II", kin, o + 32)
        if n:
            write("scw_self_dependency.scw", patched(kin, "<I", L["deps"] + 4 * off, k))
            break
    C = rank_layout(cpu)
    sh = C["shapes"]
    write("scw_shape_m_huge.scw", patched(cpu, "<d", sh, 1e15))
    write("scw_shape_k_nan.scw", patched(cpu, "<d", sh + 16, float("nan")))
    write("scw_shape_class_unknown.scw", patched(cpu, "<B", sh + 32, 200))
    write("scw_shapes_huge.scw", patched(cpu, "<I", C["deps"] + 4 * C["ndeps"], 2**25))
    # A second RANK section for the same rank (world 2, ranks 2).
    img = bytearray(kin)
    sec = bytes(img[L["sec"]:L["sec"] + 16 + L["len"]])
    img[L["sec"] + 16 + L["len"]:L["sec"] + 16 + L["len"]] = sec
    struct.pack_into("<I", img, j + 8, 2)
    write("scw_rank_twice.scw", fix(img))
    # Warning count beyond int64.
    for tag, off, ln in sections(kin):
        if tag == b"WARN":
            write("scw_warning_count_huge.scw", patched(kin, "<Q", off + 4, 2**64 - 1))
    # Damaged headers: checksum, magic, version, flags, length, truncation.
    write("scw_bad_crc.scw", patched(kin, "<q", op0, 1234, crc=False))
    write("scw_bad_magic.scw", b"\x89SCX" + kin[4:])
    write("scw_version_99.scw", patched(kin, "<I", 8, 99, crc=False))
    write("scw_flags.scw", patched(kin, "<I", 28, 1, crc=False))
    write("scw_truncated.scw", kin[: len(kin) // 2])
    write("scw_header_only.scw", kin[:32])
    write("scw_trailing_bytes.scw", kin + b"\0\0\0\0")
    write("scw_empty.scw", b"")
    write("scw_text.scw", b"this is not a job\n")
    # A section claiming more bytes than the file has (CRC fixed).
    write("scw_section_too_long.scw", patched(kin, "<Q", L["sec"] + 8, 2**40))
    # 4096 groups that each span the world (the first one's members
    # repeated; the reader keeps groups as stored): `replay --scale
    # dp=1048576` would give each 2^20 members, 32 GiB together.
    write("scw_groups_4096_world.scw", many_world_groups(kin, 4096))


def many_world_groups(img, count):
    """img with its GRPS section's first group repeated to count groups."""
    for tag, off, ln in sections(img):
        if tag == b"GRPS":
            (n,) = struct.unpack_from("<I", img, off + 8)
            one = img[off + 4:off + 12 + 8 * n]
            body = struct.pack("<I", count) + one * count
            out = bytearray(img[:off - 16])
            out += img[off - 16:off - 8] + struct.pack("<Q", len(body)) + body
            out += img[off + ln:]
            struct.pack_into("<I", out, job_off(bytes(out)) + 12, count)
            return fix(bytes(out))
    raise SystemExit("no GRPS section")


# ------------------------------------------------------------------ Chakra

def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field(num, wire, payload):
    key = varint(num << 3 | wire)
    if wire == 0:
        return key + varint(payload)
    return key + varint(len(payload)) + payload


def node(id_, name, typ, start=None, dur=None, attrs=(), deps=()):
    m = field(1, 0, id_) + field(2, 2, name.encode()) + field(3, 0, typ)
    for d in deps:
        m += field(5, 0, d)
    if start is not None:
        m += field(6, 0, start)
    if dur is not None:
        m += field(7, 0, dur)
    for a in attrs:
        m += field(10, 2, a)
    return m


def attr_int(name, v):
    return field(1, 2, name.encode()) + field(9, 0, v & (2**64 - 1))


def attr_bool(name, v):
    return field(1, 2, name.encode()) + field(27, 0, 1 if v else 0)


def stream(*msgs):
    return b"".join(varint(len(m)) + m for m in msgs)


def chakra_fixtures():
    meta = field(1, 2, b"0.0.4")
    gpu = attr_bool("is_cpu_op", False)
    ok = node(1, "kernel", 4, 10, 5, [gpu])
    write("chakra_empty_node.et", stream(meta, ok) + b"\x00")
    write("chakra_varint_endless.et", stream(meta) + b"\xff" * 16)
    write("chakra_message_too_large.et", stream(meta) + varint(2**30) + b"\x01\x02")
    write("chakra_truncated.et", stream(meta, ok)[:-3])
    write("chakra_garbage_message.et", stream(meta) + varint(6) + b"\xff\xff\xff\xff\xff\xff")
    write("chakra_duration_huge.et", stream(meta, node(1, "k", 4, 10, 2**62, [gpu])))
    write("chakra_start_huge.et", stream(meta, node(1, "k", 4, 2**62, 5, [gpu])))
    write("chakra_comm_size_huge.et",
          stream(meta, node(1, "ar", 7, 10, 5, [gpu, attr_int("comm_type", 0), attr_int("comm_size", 2**62)])))
    write("chakra_duplicate_id.et", stream(meta, ok, ok))
    write("chakra_no_nodes.et", stream(meta))
    write("chakra_only_unsupported.et", stream(meta, node(1, "meta", 1, 10, 5)))
    write("chakra_zeros_1k.et", b"\x00" * 1024)


def main():
    os.makedirs(OUT, exist_ok=True)
    scw_fixtures()
    chakra_fixtures()


if __name__ == "__main__":
    main()
