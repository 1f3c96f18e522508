package admin

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/qk-project/qk/internal/javafmt"
)

// QuotaPart is one part of a client quota entity as kafka-configs.sh
// takes it: --entity-type users|clients with --entity-name NAME or
// --entity-default, or (for describe) no name: every entity of the type.
type QuotaPart struct {
	Type    string `json:"type" yaml:"type"` // "users" or "clients"
	Name    string `json:"name,omitempty" yaml:"name,omitempty"`
	Default bool   `json:"default,omitempty" yaml:"default,omitempty"`
	// All: no name given (describe only).
	All bool `json:"-" yaml:"-"`
}

// ErrQuotaEntity: the entity flags do not name a client quota entity.
var ErrQuotaEntity = errors.New("bad client quota entity")

// wireType is the part's entity type in the quota APIs.
func (p QuotaPart) wireType() string {
	if p.Type == "clients" {
		return "client-id"
	}
	return "user"
}

// CheckQuotaParts checks entity flags as kafka-configs.sh does: users,
// clients, or both (once each); for alter every type needs a name or the
// default.
func CheckQuotaParts(parts []QuotaPart, alter bool) error {
	if len(parts) == 0 || len(parts) > 2 {
		return fmt.Errorf("%w: give --entity-type users, clients, or both", ErrQuotaEntity)
	}
	seen := map[string]bool{}
	for _, p := range parts {
		if p.Type != "users" && p.Type != "clients" {
			return fmt.Errorf("%w: entity type %q: want users or clients (topics and brokers: --topic, --broker)", ErrQuotaEntity, p.Type)
		}
		if seen[p.Type] {
			return fmt.Errorf("%w: duplicate entity type %s", ErrQuotaEntity, p.Type)
		}
		seen[p.Type] = true
		if alter && p.All {
			return fmt.Errorf("%w: --entity-name or --entity-default must be specified with each --entity-type for --alter", ErrQuotaEntity)
		}
	}
	return nil
}

// QuotaConfig is one entity's quotas.
type QuotaConfig struct {
	Entity []QuotaPart        `json:"entity" yaml:"entity"`
	Values map[string]float64 `json:"values" yaml:"values"`
}

// String names the entity as kafka-configs.sh does: "user-principal
// 'alice', client-id 'app'", "the default client-id".
func (q QuotaConfig) String() string {
	var out []string
	for _, t := range []string{"users", "clients"} {
		for _, p := range q.Entity {
			if p.Type != t {
				continue
			}
			what := "user-principal"
			if t == "clients" {
				what = "client-id"
			}
			if p.Default {
				out = append(out, "the default "+what)
			} else {
				out = append(out, what+" '"+p.Name+"'")
			}
		}
	}
	return strings.Join(out, ", ")
}

// QuotaConfigs is the view of `qk config describe --entity-type ...`:
// the quotas, and for users described by name or all users, their SCRAM
// credentials, as kafka-configs.sh --describe prints both.
type QuotaConfigs struct {
	Quotas []QuotaConfig `json:"quotas" yaml:"quotas"`
	Scram  []UserScram   `json:"scram,omitempty" yaml:"scram,omitempty"`
}

// Len is how many entities were described.
func (q *QuotaConfigs) Len() int { return len(q.Quotas) + len(q.Scram) }

// Text prints kafka-configs.sh's lines: "Quota configs for
// user-principal 'alice' are producer_byte_rate=1048576.0" (values as
// Java prints a double, keys sorted).
func (q *QuotaConfigs) Text(w *tabwriter.Writer) {
	for _, c := range q.Quotas {
		var vals []string
		for _, k := range slices.Sorted(maps.Keys(c.Values)) {
			vals = append(vals, k+"="+javafmt.Double(c.Values[k]))
		}
		fmt.Fprintf(w, "Quota configs for %s are %s\n", c, strings.Join(vals, ", "))
	}
	(&UserScrams{Users: q.Scram}).Text(w)
}

// DescribeQuotas describes the client quotas of the entities parts name,
// as kafka-configs.sh --describe does: strict, a name matching exactly,
// --entity-default the default entity, a type without a name every
// entity of the type. For users only, named or all, the users' SCRAM
// credentials are described too.
func (c *Client) DescribeQuotas(ctx context.Context, parts []QuotaPart) (*QuotaConfigs, error) {
	if err := CheckQuotaParts(parts, false); err != nil {
		return nil, err
	}
	var comps []kadm.DescribeClientQuotaComponent
	for _, p := range parts {
		dc := kadm.DescribeClientQuotaComponent{Type: p.wireType()}
		switch {
		case p.All:
			dc.MatchType = kmsg.QuotasMatchTypeAny
		case p.Default:
			dc.MatchType = kmsg.QuotasMatchTypeDefault
		default:
			dc.MatchType = kmsg.QuotasMatchTypeExact
			dc.MatchName = kmsg.StringPtr(p.Name)
		}
		comps = append(comps, dc)
	}
	described, err := c.Client.DescribeClientQuotas(ctx, true, comps)
	if err != nil {
		return nil, fmt.Errorf("describe client quotas: %w", err)
	}
	out := &QuotaConfigs{Quotas: []QuotaConfig{}}
	for _, d := range described {
		qc := QuotaConfig{Values: map[string]float64{}}
		for _, e := range d.Entity {
			p := QuotaPart{Type: "users"}
			if e.Type == "client-id" {
				p.Type = "clients"
			} else if e.Type != "user" {
				p.Type = e.Type
			}
			if e.Name == nil {
				p.Default = true
			} else {
				p.Name = *e.Name
			}
			qc.Entity = append(qc.Entity, p)
		}
		for _, v := range d.Values {
			qc.Values[v.Key] = v.Value
		}
		out.Quotas = append(out.Quotas, qc)
	}
	slices.SortFunc(out.Quotas, func(a, b QuotaConfig) int { return strings.Compare(a.String(), b.String()) })
	if len(parts) == 1 && parts[0].Type == "users" && !parts[0].Default {
		var users []string
		if !parts[0].All {
			users = []string{parts[0].Name}
		}
		// Best effort, as for kafka-configs.sh: a user without credentials
		// or a cluster without the API prints no SCRAM line.
		if res, err := c.Client.DescribeUserSCRAMs(ctx, users...); err == nil {
			for _, d := range res.Sorted() {
				if d.Err != nil || len(d.CredInfos) == 0 {
					continue
				}
				us := UserScram{User: d.User}
				for _, ci := range d.CredInfos {
					us.Credentials = append(us.Credentials, ScramCredential{Mechanism: ci.Mechanism.String(), Iterations: ci.Iterations})
				}
				out.Scram = append(out.Scram, us)
			}
		}
	}
	return out, nil
}

// QuotaAltered is the view of `qk config alter --entity-type ...`.
type QuotaAltered struct {
	Entity []QuotaPart `json:"entity" yaml:"entity"`
	DryRun bool        `json:"dry_run,omitempty" yaml:"dry_run,omitempty"`
}

// Text prints kafka-configs.sh's line: "Completed updating config for
// user alice." or "Completed updating default config for users in the
// cluster." (its first entity type names the change).
func (a *QuotaAltered) Text(w *tabwriter.Writer) {
	p := a.Entity[0]
	validated := ""
	if a.DryRun {
		validated = " (validated only; nothing changed)"
	}
	if p.Default {
		fmt.Fprintf(w, "Completed updating default config for %s in the cluster.%s\n", p.Type, validated)
		return
	}
	fmt.Fprintf(w, "Completed updating config for %s %s.%s\n", strings.TrimSuffix(p.Type, "s"), p.Name, validated)
}

// AlterQuotas sets and removes client quotas of one entity with
// AlterClientQuotas. Values must be numbers, as kafka-configs.sh parses
// them as doubles; the broker checks the keys.
func (c *Client) AlterQuotas(ctx context.Context, parts []QuotaPart, set map[string]string, del []string, dryRun bool) (*QuotaAltered, error) {
	if err := CheckQuotaParts(parts, true); err != nil {
		return nil, err
	}
	var entity kadm.ClientQuotaEntity
	for _, p := range parts {
		ec := kadm.ClientQuotaEntityComponent{Type: p.wireType()}
		if !p.Default {
			ec.Name = kmsg.StringPtr(p.Name)
		}
		entity = append(entity, ec)
	}
	var ops []kadm.AlterClientQuotaOp
	for _, k := range slices.Sorted(maps.Keys(set)) {
		v, err := strconv.ParseFloat(strings.TrimSpace(set[k]), 64)
		if err != nil {
			return nil, fmt.Errorf("cannot parse quota configuration value for %s: %s", k, set[k])
		}
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: v})
	}
	for _, k := range del {
		ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
	}
	if len(ops) == 0 {
		return nil, errors.New("nothing to alter: give --add-config or --delete-config")
	}
	alter := c.Client.AlterClientQuotas
	if dryRun {
		alter = c.Client.ValidateAlterClientQuotas
	}
	res, err := alter(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		return nil, fmt.Errorf("alter client quotas: %w", err)
	}
	for _, r := range res {
		if r.Err != nil {
			return nil, fmt.Errorf("alter client quotas of %s: %w", QuotaConfig{Entity: parts}, kafkaErr(r.Err, r.ErrMessage))
		}
	}
	return &QuotaAltered{Entity: parts, DryRun: dryRun}, nil
}

// ParseConfigList parses kafka-configs.sh's --add-config value:
// comma-separated key=value pairs, square brackets grouping a value with
// commas ("k1=v1,k2=[a,b]").
func ParseConfigList(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range splitOutsideBrackets(s) {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--add-config %q: want key=value", kv)
		}
		v = strings.TrimSpace(v)
		if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
			v = v[1 : len(v)-1]
		}
		out[strings.TrimSpace(k)] = v
	}
	return out, nil
}
