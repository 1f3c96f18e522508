package record

// Kafka's varint and varlong are protobuf base-128 encodings of the zigzag
// transform. encoding/binary's AppendVarint writes exactly that for int64,
// and a sign-extended int32 zigzags to the same bytes as Kafka's 32-bit
// varint, so writing needs no helper. Reading needs one: Kafka caps a varint
// at 5 bytes and a varlong at 10 and rejects longer encodings, while
// binary.Varint would accept a 10-byte value where a 5-byte one belongs.

// uvarint decodes an unsigned base-128 value of at most maxBytes bytes from
// b[off:]. n is the number of bytes read, 0 when b ends first, -1 when the
// encoding is longer than maxBytes or overflows 64 bits.
func uvarint(b []byte, off, maxBytes int) (v uint64, n int) {
	if off < len(b) && b[off] < 0x80 {
		return uint64(b[off]), 1
	}
	var shift uint
	for i := 0; i < maxBytes; i++ {
		if off+i >= len(b) {
			return 0, 0
		}
		c := b[off+i]
		if i == 9 && c > 1 {
			return 0, -1
		}
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			return v, i + 1
		}
		shift += 7
	}
	return 0, -1
}

// varint reads a zigzag varint (int32, at most 5 bytes).
func varint(b []byte, off int) (int32, int) {
	if off < len(b) && b[off] < 0x80 { // most lengths and deltas
		u := int32(b[off])
		return u>>1 ^ -(u & 1), 1
	}
	u, n := uvarint(b, off, 5)
	if n <= 0 {
		return 0, n
	}
	if u > 0xffffffff {
		return 0, -1
	}
	return int32(uint32(u)>>1) ^ -int32(u&1), n
}

// varlong reads a zigzag varlong (int64, at most 10 bytes).
func varlong(b []byte, off int) (int64, int) {
	u, n := uvarint(b, off, 10)
	if n <= 0 {
		return 0, n
	}
	return int64(u>>1) ^ -int64(u&1), n
}

// varintSize is the encoded size of v as a zigzag varint/varlong.
func varintSize(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
