package api

import "encoding/binary"

// Primitive encoders of the Kafka protocol, for what the handlers frame by
// hand (the request header's tagged fields, the response header and the
// Fetch response). Everything else goes through kmsg.

func appendInt16(b []byte, v int16) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func appendInt32(b []byte, v int32) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }
func appendInt64(b []byte, v int64) []byte { return binary.BigEndian.AppendUint64(b, uint64(v)) }

// appendUvarint is the protocol's unsigned varint (compact lengths, tags).
func appendUvarint(b []byte, v uint32) []byte { return binary.AppendUvarint(b, uint64(v)) }

// appendArrayLen writes an array length: int32, or uvarint(n+1) when
// flexible.
func appendArrayLen(b []byte, n int, flexible bool) []byte {
	if flexible {
		return appendUvarint(b, uint32(n)+1)
	}
	return appendInt32(b, int32(n))
}

// appendNullArrayLen writes the length of a null array: int32 -1, or
// uvarint 0 when flexible.
func appendNullArrayLen(b []byte, flexible bool) []byte {
	if flexible {
		return append(b, 0)
	}
	return appendInt32(b, -1)
}

// appendString writes a non-null string: int16 length, or uvarint(n+1)
// when flexible.
func appendString(b []byte, s string, flexible bool) []byte {
	if flexible {
		b = appendUvarint(b, uint32(len(s))+1)
	} else {
		b = appendInt16(b, int16(len(s)))
	}
	return append(b, s...)
}

// appendNullableString writes s, or null for nil.
func appendNullableString(b []byte, s *string, flexible bool) []byte {
	if s == nil {
		if flexible {
			return append(b, 0)
		}
		return appendInt16(b, -1)
	}
	return appendString(b, *s, flexible)
}

// appendBytesLen writes the length prefix of a non-null byte field of n
// bytes: int32, or uvarint(n+1) when flexible.
func appendBytesLen(b []byte, n int, flexible bool) []byte {
	if flexible {
		return appendUvarint(b, uint32(n)+1)
	}
	return appendInt32(b, int32(n))
}

// appendEmptyTags writes an empty tagged-field section.
func appendEmptyTags(b []byte) []byte { return append(b, 0) }

// skipTags skips a tagged-field section at the start of b and returns the
// bytes after it, or false if b does not hold a whole, well-formed one.
func skipTags(b []byte) ([]byte, bool) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return nil, false
	}
	b = b[k:]
	for range n {
		if _, k = binary.Uvarint(b); k <= 0 { // tag
			return nil, false
		}
		b = b[k:]
		size, k := binary.Uvarint(b)
		if k <= 0 || size > uint64(len(b)-k) {
			return nil, false
		}
		b = b[k+int(size):]
	}
	return b, true
}
