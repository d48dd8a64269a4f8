#!/usr/bin/env python3
"""Write the crafted partition directory crafted-0/ (RecordBatch v2 bytes
encoded here, independently of nereusctl's encoder).

  00000000000000000000.log  [0, 2) CreateTime, keys a, b (b with header h);
                            [2] LogAppendTime (append time 1700000009000);
                            [3, 4] idempotent producer 5, epoch 1, base
                            sequence 7
  00000000000000000007.log  a segment the cleaner shortened: named 7, its
                            first batch at 10; [11] a tombstone whose batch
                            carries a delete horizon (attribute bit 6)
"""
import os
import struct

from derive import crc32c


def zigzag(n):
    return (n << 1) ^ (n >> 63)


def uvarint(u):
    out = bytearray()
    while True:
        b = u & 0x7F
        u >>= 7
        if u:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def varint(n):
    return uvarint(zigzag(n))


def record(off_delta, ts_delta, key, value, headers=()):
    body = bytearray(b"\x00")
    body += varint(ts_delta) + varint(off_delta)
    body += varint(-1) if key is None else varint(len(key)) + key
    body += varint(-1) if value is None else varint(len(value)) + value
    body += varint(len(headers))
    for hk, hv in headers:
        body += varint(len(hk)) + hk
        body += varint(-1) if hv is None else varint(len(hv)) + hv
    return varint(len(body)) + bytes(body)


def batch(base_offset, recs, base_ts, max_ts, attrs=0, pid=-1, pepoch=-1, base_seq=-1, leader_epoch=0):
    """recs: (offset delta, timestamp delta, key, value, headers)."""
    records = b"".join(record(*r) for r in recs)
    last_delta = max(r[0] for r in recs)
    after_crc = struct.pack(">hiqqqhii", attrs, last_delta, base_ts, max_ts, pid, pepoch, base_seq, len(recs)) + records
    crc = crc32c(after_crc)
    rest = struct.pack(">ibI", leader_epoch, 2, crc) + after_crc
    return struct.pack(">qi", base_offset, len(rest)) + rest


def main():
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "crafted-0")
    os.makedirs(d, exist_ok=True)
    t = 1700000000000
    seg0 = (
        batch(0, [(0, 0, b"a", b"1", ()), (1, 5, b"b", b"2", ((b"h", b"x"),))], t, t + 5)
        + batch(2, [(0, 0, b"c", b"3", ())], t + 10, 1700000009000, attrs=0x08)
        + batch(3, [(0, 0, b"d", b"4", ()), (1, 1, b"e", b"5", ())], t + 20, t + 21, pid=5, pepoch=1, base_seq=7, leader_epoch=1)
    )
    horizon = t + 86400000
    seg7 = (
        batch(10, [(0, 0, b"f", b"6", ())], t + 30, t + 30, leader_epoch=1)
        + batch(11, [(0, 0, b"a", None, ())], horizon, horizon, attrs=0x40, leader_epoch=1)
    )
    open(os.path.join(d, "%020d.log" % 0), "wb").write(seg0)
    open(os.path.join(d, "%020d.log" % 7), "wb").write(seg7)


if __name__ == "__main__":
    main()
