//go:build linux

package network

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		name     string
		frame    []byte
		wantErr  string
		clientID *string
		size     int
	}{
		{name: "empty", frame: nil, wantErr: "shorter than the 8-byte header"},
		{name: "7 bytes", frame: make([]byte, 7), wantErr: "shorter"},
		{name: "8 bytes v1", frame: []byte{0, 3, 0, 1, 0, 0, 0, 1}, wantErr: "ends before its client id"},
		{name: "header v0", frame: []byte{0, 7, 0, 0, 0, 0, 0, 1}, size: 8},
		{name: "controlled shutdown v1 has a client id", frame: []byte{0, 7, 0, 1, 0, 0, 0, 1, 0, 1, 'x'}, clientID: ptr("x"), size: 11},
		{name: "null", frame: []byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xff, 9, 9}, size: 10},
		{name: "empty client id", frame: []byte{0, 3, 0, 1, 0, 0, 0, 1, 0, 0}, clientID: ptr(""), size: 10},
		{name: "client id exactly fills", frame: []byte{0, 3, 0, 1, 0, 0, 0, 1, 0, 2, 'a', 'b'}, clientID: ptr("ab"), size: 12},
		{name: "client id overruns", frame: []byte{0, 3, 0, 1, 0, 0, 0, 1, 0, 3, 'a', 'b'}, wantErr: "overruns"},
		{name: "length -2", frame: []byte{0, 3, 0, 1, 0, 0, 0, 1, 0xff, 0xfe}, wantErr: "negative"},
		{name: "length -32768", frame: []byte{0, 3, 0, 1, 0, 0, 0, 1, 0x80, 0}, wantErr: "negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r Request
			err := parseHeader(&r, tt.frame, nil)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.clientID, r.ClientID)
			require.Equal(t, tt.size, r.HeaderSize)
		})
	}
}

func TestParseHeaderReusesClientID(t *testing.T) {
	f := frame(0, 9, 1, ptr("same"), nil)[4:]
	var a, b, c Request
	require.NoError(t, parseHeader(&a, f, nil))
	require.NoError(t, parseHeader(&b, f, a.ClientID))
	require.Same(t, a.ClientID, b.ClientID)
	require.NoError(t, parseHeader(&c, frame(0, 9, 1, ptr("other"), nil)[4:], a.ClientID))
	require.Equal(t, "other", *c.ClientID)
	require.Equal(t, "same", *a.ClientID)
}

func FuzzParseHeader(f *testing.F) {
	f.Add([]byte{0, 7, 0, 0, 0, 0, 0, 1})
	f.Add(frame(0, 9, 1, ptr("client"), []byte("body"))[4:])
	f.Add(frame(18, 3, -1, nil, nil)[4:])
	f.Add([]byte{0, 3, 0, 1, 0, 0, 0, 1, 0x7f, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		var r Request
		err := parseHeader(&r, b, nil)
		if err != nil {
			return
		}
		if r.HeaderSize < minFrameSize || r.HeaderSize > len(b) {
			t.Fatalf("header size %d outside 8..%d", r.HeaderSize, len(b))
		}
		if int16(binary.BigEndian.Uint16(b)) != r.ApiKey || int32(binary.BigEndian.Uint32(b[4:])) != r.CorrelationID {
			t.Fatal("fields not taken from the frame")
		}
		if r.ClientID != nil && r.HeaderSize != minFrameSize+2+len(*r.ClientID) {
			t.Fatalf("header size %d for a %d-byte client id", r.HeaderSize, len(*r.ClientID))
		}
	})
}
