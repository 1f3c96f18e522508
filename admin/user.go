package admin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
)

// DefaultScramIterations is what kafka-configs.sh uses when a SCRAM
// config names no iterations.
const DefaultScramIterations = 4096

// ScramCredential is one mechanism a user has a credential for: never
// the secret, which no broker gives out.
type ScramCredential struct {
	Mechanism  string `json:"mechanism" yaml:"mechanism"`
	Iterations int32  `json:"iterations" yaml:"iterations"`
}

// UserScram is one user's SCRAM credentials, or why they could not be
// described.
type UserScram struct {
	User        string            `json:"user" yaml:"user"`
	Credentials []ScramCredential `json:"credentials" yaml:"credentials"`
	Error       string            `json:"error,omitempty" yaml:"error,omitempty"`
}

// UserScrams is the answer of DescribeUserScramCredentials.
type UserScrams struct {
	Users []UserScram `json:"users" yaml:"users"`
}

// Len is how many users were answered.
func (u *UserScrams) Len() int { return len(u.Users) }

// Text prints kafka-configs.sh's lines for --entity-type users
// --describe.
func (u *UserScrams) Text(w *tabwriter.Writer) {
	for _, us := range u.Users {
		if us.Error != "" {
			fmt.Fprintf(w, "Error retrieving SCRAM credential configs for user-principal '%s': %s\n", us.User, us.Error)
			continue
		}
		parts := make([]string, len(us.Credentials))
		for i, c := range us.Credentials {
			parts[i] = c.Mechanism + "=iterations=" + strconv.Itoa(int(c.Iterations))
		}
		fmt.Fprintf(w, "SCRAM credential configs for user-principal '%s' are %s\n", us.User, strings.Join(parts, ", "))
	}
}

// ErrUserDescribe: some named user could not be described (no
// credentials, or an error); the others are still printed.
var ErrUserDescribe = errors.New("some users' SCRAM credentials could not be described")

// DescribeUserScrams describes the named users' SCRAM credentials, or
// every user's when none is named.
func (c *Client) DescribeUserScrams(ctx context.Context, users ...string) (*UserScrams, error) {
	res, err := c.Client.DescribeUserSCRAMs(ctx, users...)
	if err != nil {
		return nil, fmt.Errorf("describe user scram credentials: %w", err)
	}
	out := &UserScrams{}
	failed := false
	for _, d := range res.Sorted() {
		us := UserScram{User: d.User, Credentials: []ScramCredential{}}
		if d.Err != nil {
			us.Error, failed = d.Err.Error(), true
			if d.ErrMessage != "" {
				us.Error += ": " + d.ErrMessage
			}
		}
		for _, ci := range d.CredInfos {
			us.Credentials = append(us.Credentials, ScramCredential{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
		}
		out.Users = append(out.Users, us)
	}
	if failed {
		return out, ErrUserDescribe
	}
	return out, nil
}

// ScramUpsert is one SCRAM config of --add-config: the mechanism, the
// password (salted here, never sent) and the iterations.
type ScramUpsert struct {
	Mechanism  kadm.ScramMechanism
	Password   string
	Iterations int32
}

// parseScramMechanism accepts Kafka's mechanism names.
func parseScramMechanism(name string) (kadm.ScramMechanism, error) {
	switch name {
	case "SCRAM-SHA-256":
		return kadm.ScramSha256, nil
	case "SCRAM-SHA-512":
		return kadm.ScramSha512, nil
	}
	return 0, fmt.Errorf("unknown SCRAM mechanism %q: want SCRAM-SHA-256 or SCRAM-SHA-512", name)
}

// ParseScramConfigs reads kafka-configs.sh's --add-config for users:
// comma-separated MECHANISM=[iterations=N,password=P] entries (the
// brackets group a value's own commas, as Kafka's parser does);
// iterations defaults to 4096.
func ParseScramConfigs(s string) ([]ScramUpsert, error) {
	var out []ScramUpsert
	for _, entry := range splitOutsideBrackets(s) {
		if entry == "" {
			continue
		}
		name, value, ok := strings.Cut(entry, "=")
		if !ok {
			return nil, fmt.Errorf("--add-config %q: want MECHANISM=[iterations=N,password=P]", entry)
		}
		m, err := parseScramMechanism(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(value, "[") || !strings.HasSuffix(value, "]") {
			return nil, fmt.Errorf("--add-config %s: want [iterations=N,password=P]", name)
		}
		u := ScramUpsert{Mechanism: m, Iterations: DefaultScramIterations}
		havePassword := false
		for kv := range strings.SplitSeq(value[1:len(value)-1], ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("--add-config %s: %q: want key=value", name, kv)
			}
			switch k {
			case "iterations":
				n, err := strconv.ParseInt(v, 10, 32)
				if err != nil {
					return nil, fmt.Errorf("--add-config %s: iterations %q: %w", name, v, err)
				}
				u.Iterations = int32(n)
			case "password":
				u.Password, havePassword = v, true
			default:
				return nil, fmt.Errorf("--add-config %s: unknown key %q (iterations, password)", name, k)
			}
		}
		if !havePassword {
			return nil, fmt.Errorf("--add-config %s: no password", name)
		}
		out = append(out, u)
	}
	return out, nil
}

// splitOutsideBrackets splits s at the commas outside [...].
func splitOutsideBrackets(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// UserAltered is the answer of an alter of one user's credentials.
type UserAltered struct {
	User string `json:"user" yaml:"user"`
}

// Text prints kafka-configs.sh's line.
func (u *UserAltered) Text(w *tabwriter.Writer) {
	fmt.Fprintf(w, "Completed updating config for user %s.\n", u.User)
}

// AlterUserScrams upserts and deletes (by mechanism name) one user's
// SCRAM credentials in one AlterUserScramCredentials request. The
// passwords are salted here with a random salt (KIP-554): only the salt
// and the salted password travel.
func (c *Client) AlterUserScrams(ctx context.Context, user string, upserts []ScramUpsert, deletes []string) (*UserAltered, error) {
	if user == "" {
		return nil, errors.New("--entity-name is required")
	}
	if len(upserts) == 0 && len(deletes) == 0 {
		return nil, errors.New("nothing to alter: give --add-config or --delete-config")
	}
	var del []kadm.DeleteSCRAM
	for _, name := range deletes {
		m, err := parseScramMechanism(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(upserts, func(u ScramUpsert) bool { return u.Mechanism == m }) {
			return nil, fmt.Errorf("%s is both added and deleted", name)
		}
		del = append(del, kadm.DeleteSCRAM{User: user, Mechanism: m})
	}
	var up []kadm.UpsertSCRAM
	for _, u := range upserts {
		up = append(up, kadm.UpsertSCRAM{User: user, Mechanism: u.Mechanism, Iterations: u.Iterations, Password: u.Password})
	}
	res, err := c.Client.AlterUserSCRAMs(ctx, del, up)
	if err != nil {
		return nil, fmt.Errorf("alter user scram credentials: %w", err)
	}
	r, ok := res[user]
	if !ok {
		return nil, fmt.Errorf("alter user %s: no answer", user)
	}
	if r.Err != nil {
		if r.ErrMessage != "" {
			return nil, fmt.Errorf("alter user %s: %w: %s", user, r.Err, r.ErrMessage)
		}
		return nil, fmt.Errorf("alter user %s: %w", user, r.Err)
	}
	return &UserAltered{User: user}, nil
}
