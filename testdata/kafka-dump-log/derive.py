#!/usr/bin/env python3
"""Derive kafka-dump-log's output for a partition directory by hand.

This is how the expected files in this folder were produced: there is no
Kafka installation here to run kafka-dump-log.sh, so the fields of each
line were computed from the .log bytes by this independent decoder (it
shares no code with nereusctl), following the printing code of Apache
Kafka's DumpLogSegments (tools/src/main/java/org/apache/kafka/tools/
DumpLogSegments.java: execute, dumpLog, printBatchLevel,
dumpBatchRecords, printRecordMetadata, printRecordContents) and the
accessors it calls (DefaultRecordBatch, DefaultRecord).

Usage: derive.py [--deep-iteration] [--print-data-log] DIR
prints what `kafka-dump-log.sh [--deep-iteration] [--print-data-log]
--files DIR/A.log,DIR/B.log,...` prints for every .log file of DIR in
offset order, run from DIR's parent folder (--print-data-log implies
--deep-iteration, as in DumpLogSegmentsOptions.isDeepIteration).
"""
import os
import struct
import sys


def crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        t.append(c)
    return t


TABLE = crc32c_table()


def crc32c(b):
    c = 0xFFFFFFFF
    for x in b:
        c = TABLE[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def varint(b, i):
    """A zig-zag varint (Kafka's ByteUtils.readVarint / readVarlong)."""
    shift, u = 0, 0
    while True:
        x = b[i]
        i += 1
        u |= (x & 0x7F) << shift
        shift += 7
        if not x & 0x80:
            break
    return (u >> 1) ^ -(u & 1), i


CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
INT_MAX = 2**31 - 1


def increment_sequence(seq, inc):
    # DefaultRecordBatch.incrementSequence
    if seq > INT_MAX - inc:
        return inc - (INT_MAX - seq) - 1
    return seq + inc


def dump(path, deep, print_data):
    name = os.path.basename(path)
    print("Dumping " + path)
    print("Log starting offset: %d" % int(name.split(".")[0]))
    data = open(path, "rb").read()
    pos = 0
    while pos + 12 <= len(data):
        base_offset, length = struct.unpack(">qi", data[pos:pos + 12])
        batch = data[pos:pos + 12 + length]
        (leader_epoch, magic, crc, attrs, last_delta, base_ts, max_ts,
         pid, pepoch, base_seq, count) = struct.unpack(">ibIhiqqqhii", batch[12:61])
        assert magic == 2, "only RecordBatch v2 is handled here"
        codec = attrs & 7
        lat = attrs & 0x08
        ts_type = "LogAppendTime" if lat else "CreateTime"
        horizon = "OptionalLong[%d]" % base_ts if attrs & 0x40 else "OptionalLong.empty"
        last_seq = -1 if base_seq == -1 else increment_sequence(base_seq, last_delta)
        valid = crc32c(batch[21:]) == crc
        print("baseOffset: %d lastOffset: %d count: %d baseSequence: %d lastSequence: %d "
              "producerId: %d producerEpoch: %d partitionLeaderEpoch: %d isTransactional: %s "
              "isControl: %s deleteHorizonMs: %s position: %d %s: %d size: %d magic: %d "
              "compresscodec: %s crc: %d isvalid: %s" % (
                  base_offset, base_offset + last_delta, count, base_seq, last_seq,
                  pid, pepoch, leader_epoch, str(bool(attrs & 0x10)).lower(),
                  str(bool(attrs & 0x20)).lower(), horizon, pos, ts_type, max_ts,
                  len(batch), magic, CODECS[codec], crc, str(valid).lower()))
        pos += len(batch)
        if not deep:
            continue
        assert codec == 0, "compressed batches are not handled here"
        assert not attrs & 0x20, "control batches are not handled here"
        i = 61
        for _ in range(count):
            _, i = varint(batch, i)  # record length
            i += 1                   # record attributes
            ts_delta, i = varint(batch, i)
            off_delta, i = varint(batch, i)
            klen, i = varint(batch, i)
            key = None
            if klen >= 0:
                key, i = batch[i:i + klen], i + klen
            vlen, i = varint(batch, i)
            value = None
            if vlen >= 0:
                value, i = batch[i:i + vlen], i + vlen
            nh, i = varint(batch, i)
            hkeys = []
            for _ in range(nh):
                hk, i = varint(batch, i)
                hkeys.append(batch[i:i + hk].decode("utf-8"))
                i += hk
                hv, i = varint(batch, i)
                if hv >= 0:
                    i += hv
            ts = max_ts if lat else base_ts + ts_delta
            seq = -1 if base_seq == -1 else increment_sequence(base_seq, off_delta)
            line = "| offset: %d %s: %d keySize: %d valueSize: %d sequence: %d headerKeys: [%s]" % (
                base_offset + off_delta, ts_type, ts, klen, vlen, seq, ",".join(hkeys))
            if print_data:
                # DecoderMessageParser with StringDecoder (UTF-8)
                if key is not None:
                    line += " key: " + key.decode("utf-8")
                if value is not None:
                    line += " payload: " + value.decode("utf-8")
            print(line)


def main():
    args = sys.argv[1:]
    print_data = "--print-data-log" in args
    deep = print_data or "--deep-iteration" in args
    args = [a for a in args if not a.startswith("--")]
    d = args[0].rstrip("/")
    logs = sorted(f for f in os.listdir(d) if f.endswith(".log"))
    for f in logs:
        dump(d + "/" + f, deep, print_data)


if __name__ == "__main__":
    main()
