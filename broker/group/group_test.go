package group

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/twmb/franz-go/pkg/kerr"
)

// TestGroup runs the scripts in testdata/group/. Verbs:
//
//	new [delay=3s] [max-size=N]          a fresh Empty group
//	join [member=ID] [instance=I] [client=C] [protocols=range,rr] [meta=x]
//	     [type=consumer] [session=10s] [rebalance=30s] [v3]
//	sync member=ID gen=N [assign=ID:x,ID:y]
//	heartbeat member=ID gen=N [instance=I]
//	leave member=ID[,ID] [instance=I]
//	commit [member=ID] gen=N [instance=I]
//	tick 3s                             advance the clock and fire timers
//	state                               the group as DescribeGroups sees it
//
// Answers delivered later (a waiting join or sync) print when they come.
func TestGroup(t *testing.T) {
	datadriven.Walk(t, "testdata/group", func(t *testing.T, path string) {
		var (
			g   *Group
			now = time.UnixMilli(1_700_000_000_000)
			out strings.Builder
			ids int
		)
		newGroup := func(d *datadriven.TestData) {
			cfg := Config{InitialRebalanceDelay: 0, MinSessionTimeout: 6 * time.Second, MaxSessionTimeout: 30 * time.Minute}
			for _, a := range d.CmdArgs {
				switch a.Key {
				case "delay":
					cfg.InitialRebalanceDelay = dur(t, a.Vals[0])
				case "max-size":
					fmt.Sscan(a.Vals[0], &cfg.MaxSize)
				}
			}
			g = New("g", cfg, now)
		}
		joinCB := func(tag string) func(JoinResult) {
			return func(r JoinResult) {
				fmt.Fprintf(&out, "join %s: %s member=%s gen=%d", tag, errName(r.Err), r.MemberID, r.Generation)
				if r.Err == nil {
					fmt.Fprintf(&out, " protocol=%s leader=%s", r.Protocol, r.Leader)
					if len(r.Members) > 0 {
						var ms []string
						for _, m := range r.Members {
							ms = append(ms, m.MemberID+"("+string(m.Metadata)+")")
						}
						fmt.Fprintf(&out, " members=%s", strings.Join(ms, ","))
					}
					if r.SkipAssignment {
						out.WriteString(" skip-assignment")
					}
				}
				out.WriteString("\n")
			}
		}
		syncCB := func(tag string) func(SyncResult) {
			return func(r SyncResult) {
				fmt.Fprintf(&out, "sync %s: %s", tag, errName(r.Err))
				if r.Err == nil {
					fmt.Fprintf(&out, " assignment=%q", r.Assignment)
				}
				out.WriteString("\n")
			}
		}
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			out.Reset()
			if g == nil && d.Cmd != "new" {
				newGroup(d)
			}
			arg := func(k, def string) string {
				for _, a := range d.CmdArgs {
					if a.Key == k {
						if len(a.Vals) == 0 {
							return "true"
						}
						return strings.Join(a.Vals, ",")
					}
				}
				return def
			}
			instance := func() *string {
				if s := arg("instance", ""); s != "" {
					return &s
				}
				return nil
			}
			gen := func() int32 {
				var n int32
				fmt.Sscan(arg("gen", "-1"), &n)
				return n
			}
			switch d.Cmd {
			case "new":
				newGroup(d)
				return "ok\n"
			case "join":
				client := arg("client", "c")
				ids++
				member := arg("member", "")
				var ps []Protocol
				for _, p := range strings.Split(arg("protocols", "range"), ",") {
					ps = append(ps, Protocol{Name: p, Metadata: []byte(arg("meta", "m"))})
				}
				req := JoinRequest{MemberID: member, InstanceID: instance(), ClientID: client, ClientHost: "/127.0.0.1",
					ProtocolType: arg("type", "consumer"), Protocols: ps, SessionTimeout: dur(t, arg("session", "10s")),
					RebalanceTimeout: dur(t, arg("rebalance", "30s")), RequireKnownMemberID: arg("v3", "") == "",
					NewMemberID: fmt.Sprintf("%s-%d", client, ids)}
				tag := member
				if tag == "" {
					tag = "(new " + client + ")"
				}
				g.Join(req, now, joinCB(tag))
			case "sync":
				assign := map[string][]byte{}
				if s := arg("assign", ""); s != "" {
					for _, kv := range strings.Split(s, ",") {
						k, v, _ := strings.Cut(kv, ":")
						assign[k] = []byte(v)
					}
				}
				g.Sync(SyncRequest{MemberID: arg("member", ""), InstanceID: instance(), Generation: gen(), Assignments: assign}, now, syncCB(arg("member", "")))
			case "heartbeat":
				fmt.Fprintf(&out, "heartbeat: %s\n", errName(g.Heartbeat(arg("member", ""), instance(), gen(), now)))
			case "leave":
				var lms []LeaveMember
				for _, m := range strings.Split(arg("member", ""), ",") {
					lms = append(lms, LeaveMember{MemberID: m, InstanceID: instance()})
				}
				for i, err := range g.Leave(lms, now) {
					fmt.Fprintf(&out, "leave %s: %s\n", lms[i].MemberID, errName(err))
				}
			case "store-failed":
				g.AssignmentNotStored(gen(), now)
			case "commit":
				fmt.Fprintf(&out, "commit: %s\n", errName(g.CheckCommit(arg("member", ""), instance(), gen(), now)))
			case "tick":
				now = now.Add(dur(t, d.CmdArgs[0].Key))
				g.Tick(now)
			case "state":
			default:
				t.Fatalf("unknown verb %q", d.Cmd)
			}
			if g.TakeDirty() {
				out.WriteString("store group metadata\n")
			}
			fmt.Fprintf(&out, "> %s gen=%d", g.State(), g.Generation())
			if g.Protocol() != "" {
				fmt.Fprintf(&out, " protocol=%s", g.Protocol())
			}
			if g.Leader() != "" {
				fmt.Fprintf(&out, " leader=%s", g.Leader())
			}
			var ms []string
			for _, m := range g.Members() {
				s := m.ID
				if len(m.Assignment) > 0 {
					s += "=" + string(m.Assignment)
				}
				ms = append(ms, s)
			}
			if len(ms) > 0 {
				fmt.Fprintf(&out, " members=%s", strings.Join(ms, ","))
			}
			if dl, ok := g.Deadline(); ok {
				fmt.Fprintf(&out, " next=+%s", dl.Sub(now))
			}
			out.WriteString("\n")
			return out.String()
		})
	})
}

func dur(t *testing.T, s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		t.Fatalf("bad duration %q: %v", s, err)
	}
	return d
}

func errName(err *kerr.Error) string {
	if err == nil {
		return "OK"
	}
	return err.Message
}

func TestPartitionFor(t *testing.T) {
	for _, tc := range []struct {
		group string
		want  int32
	}{
		{"simple-consumer-example", 16},
		{"console-consumer-55231", 17},
		{"console-consumer-70596", 28},
		{"", 0},
	} {
		if got := PartitionFor(tc.group, 50); got != tc.want {
			t.Errorf("PartitionFor(%q) = %d, want %d", tc.group, got, tc.want)
		}
	}
	// "polygenelubricants" hashes to MinInt32 in Java: abs is 0.
	if got := PartitionFor("polygenelubricants", 50); got != 0 {
		t.Errorf("MinInt32 hash: got %d, want 0", got)
	}
}

func TestParseState(t *testing.T) {
	for s := Empty; s <= Dead; s++ {
		got, ok := ParseState(strings.ToLower(s.String()))
		if !ok || got != s {
			t.Errorf("ParseState(%s) = %v, %v", s, got, ok)
		}
	}
	_ = slices.Contains[[]int]
}
