package scram

import (
	"bytes"
	"testing"
)

// FuzzServer: whatever two messages a client sends, the exchange ends
// with an answer or ErrAuthenticationFailed, never a panic, and it only
// succeeds for the RFC 7677 user with a valid proof.
func FuzzServer(f *testing.F) {
	f.Add([]byte(rfc7677.clientFirst), []byte(rfc7677.clientFinal))
	f.Add([]byte("n,,n=user,r=x"), []byte("c=biws,r=x,p="))
	f.Add([]byte("y,a=user,n=us=2Cer,r=abc,ext=1"), []byte(",p=,p="))
	f.Add([]byte(""), []byte(""))
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := NewServer(SHA256, rfcLookup(t), func() string { return rfc7677.serverNonce })
		if _, done, err := s.Step(first); err != nil || done {
			return
		}
		out, done, err := s.Step(final)
		if err == nil != done {
			t.Fatalf("done %v with err %v", done, err)
		}
		if done && (!bytes.Equal(first, []byte(rfc7677.clientFirst)) || !bytes.HasPrefix(out, []byte("v="))) {
			// Another first message can only succeed with a proof
			// computed for it, which the fuzzer cannot forge.
			t.Fatalf("authenticated with %q / %q", first, final)
		}
	})
}

// FuzzParse: credential strings from the store parse or are refused;
// what parses formats back to a string that parses to the same.
func FuzzParse(f *testing.F) {
	f.Add("salt=MTIz,stored_key=YWJj,server_key=ZGVm,iterations=4096")
	f.Add("iterations=x")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := Parse(s)
		if err != nil {
			return
		}
		c2, err := Parse(c.String())
		if err != nil || c2.String() != c.String() {
			t.Fatalf("%q: round trip %q: %v", s, c.String(), err)
		}
	})
}
