//go:build linux

package network

import (
	"encoding/binary"
	"fmt"
)

// minFrameSize is the smallest request frame: api key, api version and
// correlation id.
const minFrameSize = 8

// apiControlledShutdown is the one API whose version 0 uses request header
// v0, which has no client id.
const apiControlledShutdown = 7

// parseHeader decodes the request header fields of frame into r: api key
// (int16), api version (int16), correlation id (int32) and, except for
// header v0, the nullable client id (int16 length, -1 for null, then that
// many bytes). last is the client id of the connection's previous request,
// reused when the bytes are equal so that a steady client allocates no
// string per request. It never panics; a short or inconsistent header is an
// error.
func parseHeader(r *Request, frame []byte, last *string) error {
	if len(frame) < minFrameSize {
		return fmt.Errorf("request of %d bytes is shorter than the %d-byte header", len(frame), minFrameSize)
	}
	r.ApiKey = int16(binary.BigEndian.Uint16(frame[0:]))
	r.ApiVersion = int16(binary.BigEndian.Uint16(frame[2:]))
	r.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	if r.ApiKey == apiControlledShutdown && r.ApiVersion == 0 {
		r.HeaderSize = minFrameSize
		return nil
	}
	if len(frame) < minFrameSize+2 {
		return fmt.Errorf("request of %d bytes ends before its client id", len(frame))
	}
	n := int(int16(binary.BigEndian.Uint16(frame[minFrameSize:])))
	start := minFrameSize + 2
	switch {
	case n == -1:
		r.ClientID = nil
	case n < -1:
		return fmt.Errorf("client id length %d is negative", n)
	case start+n > len(frame):
		return fmt.Errorf("client id of %d bytes overruns the %d-byte request", n, len(frame))
	default:
		b := frame[start : start+n]
		if last != nil && *last == string(b) {
			r.ClientID = last
		} else {
			s := string(b)
			r.ClientID = &s
		}
		start += n
	}
	r.HeaderSize = start
	return nil
}
