package kafka

// Zig-zag varints as Kafka's ByteUtils reads and writes them.
//
// readVarint follows ByteUtils.readVarint: at most 5 bytes, the 5th byte's
// continuation bit must be clear, bits beyond 32 are dropped. readVarlong
// reads at most 10 bytes. n is the number of bytes consumed; n == 0 means
// the input ended inside the varint, n < 0 that it is too long.

func readVarint(b []byte) (v int32, n int) {
	var u uint32
	var shift uint
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c&0x80 == 0 {
			u |= uint32(c) << shift
			return int32(u>>1) ^ -int32(u&1), i + 1
		}
		u |= uint32(c&0x7f) << shift
		shift += 7
		if shift > 28 {
			return 0, -1
		}
	}
	return 0, 0
}

func readVarlong(b []byte) (v int64, n int) {
	var u uint64
	var shift uint
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c&0x80 == 0 {
			u |= uint64(c) << shift
			return int64(u>>1) ^ -int64(u&1), i + 1
		}
		u |= uint64(c&0x7f) << shift
		shift += 7
		if shift > 63 {
			return 0, -1
		}
	}
	return 0, 0
}

func appendUvarint(b []byte, u uint64) []byte {
	for u >= 0x80 {
		b = append(b, byte(u)|0x80)
		u >>= 7
	}
	return append(b, byte(u))
}

func appendVarint(b []byte, v int32) []byte {
	return appendUvarint(b, uint64(uint32((v<<1)^(v>>31))))
}

func appendVarlong(b []byte, v int64) []byte {
	return appendUvarint(b, uint64((v<<1)^(v>>63)))
}

func uvarintSize(u uint64) int {
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}

func varintSize(v int32) int { return uvarintSize(uint64(uint32((v << 1) ^ (v >> 31)))) }

func varlongSize(v int64) int { return uvarintSize(uint64((v << 1) ^ (v >> 63))) }
