// Package plain is SASL/PLAIN on the broker (RFC 4616, Kafka's
// PlainSaslServer) and the JAAS configuration Kafka takes its users from,
// as pure functions: the SaslAuthenticate handler feeds them bytes and
// config text.
package plain

import (
	"bytes"
	"crypto/subtle"
	"errors"
	"fmt"
	"strings"
)

// ErrAuthenticationFailed is a refused PLAIN authentication; as Kafka's,
// its text does not say whether the user or the password was wrong.
var ErrAuthenticationFailed = errors.New("authentication failed: invalid username or password")

// Authenticate checks one PLAIN message, "authzid NUL authcid NUL
// password", against users (name to password) and returns the user. An
// authorization id other than the user is refused, as Kafka does.
func Authenticate(msg []byte, users map[string]string) (string, error) {
	parts := bytes.Split(msg, []byte{0})
	if len(parts) != 3 {
		return "", fmt.Errorf("%w (malformed PLAIN message: want authzid, user and password separated by NUL)", ErrAuthenticationFailed)
	}
	authzid, user, pass := string(parts[0]), string(parts[1]), string(parts[2])
	if user == "" || pass == "" {
		return "", fmt.Errorf("%w (empty user name or password)", ErrAuthenticationFailed)
	}
	if authzid != "" && authzid != user {
		return "", fmt.Errorf("authentication failed: authorization id %q is not the user name", authzid)
	}
	want, ok := users[user]
	// Compared in constant time, and a missing user costs the same.
	if subtle.ConstantTimeCompare([]byte(pass), []byte(want)) != 1 || !ok {
		return "", ErrAuthenticationFailed
	}
	return user, nil
}

// LoginModulePlain is the JAAS login module of Kafka's PLAIN mechanism.
const LoginModulePlain = "org.apache.kafka.common.security.plain.PlainLoginModule"

// JAAS is one parsed sasl.jaas.config value: the login module, its
// control flag and its options.
type JAAS struct {
	Module  string
	Flag    string // required, requisite, sufficient or optional
	Options map[string]string
}

// ParseJAAS parses a sasl.jaas.config value as Kafka's JaasConfig does:
// `<module> <flag> key="value" ... ;` (values quoted or bare; one login
// module, ending in a semicolon). The value holds passwords, so its errors
// quote none of it: they say what is wrong and where.
func ParseJAAS(s string) (JAAS, error) {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, ";") {
		return JAAS{}, fmt.Errorf("sasl.jaas.config: missing the ';' that ends the login module")
	}
	body := strings.TrimSpace(strings.TrimSuffix(s, ";"))
	toks, err := tokenize(body)
	if err != nil {
		return JAAS{}, fmt.Errorf("sasl.jaas.config: %w", err)
	}
	if len(toks) < 2 {
		return JAAS{}, fmt.Errorf("sasl.jaas.config: want '<LoginModule> <flag> [key=value ...];'")
	}
	j := JAAS{Module: toks[0], Flag: toks[1], Options: map[string]string{}}
	switch j.Flag {
	case "required", "requisite", "sufficient", "optional":
	default:
		return JAAS{}, fmt.Errorf("sasl.jaas.config: the login module's control flag (the word after its class name) is not required, requisite, sufficient or optional")
	}
	for i, kv := range toks[2:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return JAAS{}, fmt.Errorf("sasl.jaas.config: option %d of the login module is not key=value", i+1)
		}
		j.Options[k] = v
	}
	return j, nil
}

// Users are the PLAIN users of a PlainLoginModule config: its
// user_<name>="<password>" options.
func (j JAAS) Users() (map[string]string, error) {
	if j.Module != LoginModulePlain {
		return nil, fmt.Errorf("sasl.jaas.config: login module %s, want %s for PLAIN", j.Module, LoginModulePlain)
	}
	users := map[string]string{}
	for k, v := range j.Options {
		if name, ok := strings.CutPrefix(k, "user_"); ok && name != "" {
			users[name] = v
		}
	}
	return users, nil
}

// tokenize splits on spaces outside double quotes and unquotes values
// (backslash escapes inside quotes).
func tokenize(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inQuote, esc, have := false, false, false
	for _, r := range s {
		switch {
		case esc:
			cur.WriteRune(r)
			esc = false
		case inQuote && r == '\\':
			esc = true
		case r == '"':
			inQuote = !inQuote
			have = true
		case !inQuote && (r == ' ' || r == '\t' || r == '\n' || r == '\r'):
			if have || cur.Len() > 0 {
				out = append(out, cur.String())
				cur.Reset()
				have = false
			}
		default:
			cur.WriteRune(r)
		}
	}
	if inQuote {
		return nil, errors.New("unterminated quoted value")
	}
	if have || cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out, nil
}
