package plain

import "testing"

// FuzzAuthenticate: any PLAIN message is answered or refused, and only
// the right password authenticates.
func FuzzAuthenticate(f *testing.F) {
	f.Add([]byte("\x00alice\x00alice-secret"))
	f.Add([]byte("alice\x00alice\x00x"))
	f.Add([]byte("\x00\x00"))
	users := map[string]string{"alice": "alice-secret"}
	f.Fuzz(func(t *testing.T, msg []byte) {
		u, err := Authenticate(msg, users)
		if err == nil && (u != "alice" || string(msg[len(msg)-len("alice-secret"):]) != "alice-secret") {
			t.Fatalf("%q authenticated as %q", msg, u)
		}
	})
}

// FuzzParseJAAS: any sasl.jaas.config value parses or is refused.
func FuzzParseJAAS(f *testing.F) {
	f.Add(`org.apache.kafka.common.security.plain.PlainLoginModule required user_a="b";`)
	f.Add(`x required a="\"";`)
	f.Add(`;`)
	f.Fuzz(func(t *testing.T, s string) {
		j, err := ParseJAAS(s)
		if err == nil && (j.Module == "" || j.Options == nil) {
			t.Fatalf("%q parsed to %+v", s, j)
		}
		_, _ = j.Users()
	})
}
