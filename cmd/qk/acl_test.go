//go:build linux

package main

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qk-project/qk/broker/brokertest"
)

// qk acl against an in-process broker with ACLs on: kafka-acls.sh's
// lines byte for byte.
func TestACL(t *testing.T) {
	b := brokertest.StartBroker(t, brokertest.WithAuthorizer())
	run := func(args ...string) (string, error) {
		out, stderr, err := runQK(t, append([]string{"acl"}, append(args, "-b", b.Addr)...)...)
		if err != nil {
			return out, &cmdError{err: err, stderr: stderr}
		}
		return out, nil
	}
	const orders = "ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)"
	out, err := run("--add", "--allow-principal", "User:alice", "--operation", "Read", "--operation", "Describe", "--topic", "orders")
	require.NoError(t, err)
	require.Equal(t, "Adding ACLs for resource `"+orders+"`: \n"+
		" \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n"+
		"\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n\n"+
		"Current ACLs for resource `"+orders+"`: \n"+
		" \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW)\n"+
		"\t(principal=User:alice, host=*, operation=READ, permissionType=ALLOW) \n\n", out)

	_, err = run("--add", "--allow-principal", "User:app", "--producer", "--topic", "pay", "--resource-pattern-type", "prefixed", "--idempotent")
	require.NoError(t, err)
	out, err = run("--list", "--topic", "payments", "--resource-pattern-type", "match")
	require.NoError(t, err)
	require.Equal(t, "Current ACLs for resource `ResourcePattern(resourceType=TOPIC, name=pay, patternType=PREFIXED)`: \n"+
		" \t(principal=User:app, host=*, operation=CREATE, permissionType=ALLOW)\n"+
		"\t(principal=User:app, host=*, operation=DESCRIBE, permissionType=ALLOW)\n"+
		"\t(principal=User:app, host=*, operation=WRITE, permissionType=ALLOW) \n\n", out)
	out, err = run("--list", "--cluster")
	require.NoError(t, err)
	require.Equal(t, "Current ACLs for resource `ResourcePattern(resourceType=CLUSTER, name=kafka-cluster, patternType=LITERAL)`: \n"+
		" \t(principal=User:app, host=*, operation=IDEMPOTENT_WRITE, permissionType=ALLOW) \n\n", out)

	_, err = run("--add", "--allow-principal", "User:a", "--operation", "Read", "--cluster")
	require.ErrorContains(t, err, "ResourceType CLUSTER only supports operations")
	_, err = run("--add", "--list", "--topic", "x")
	require.ErrorContains(t, err, "exactly one action")

	// --remove asks; "n" keeps them, --force does not ask.
	out, err = run("--remove", "--force", "--topic", "orders", "--allow-principal", "User:alice", "--operation", "Read")
	require.NoError(t, err)
	require.Equal(t, "Current ACLs for resource `"+orders+"`: \n"+
		" \t(principal=User:alice, host=*, operation=DESCRIBE, permissionType=ALLOW) \n\n", out)
	out, err = run("--remove", "--force", "--topic", "orders")
	require.NoError(t, err)
	require.Empty(t, out)
	out, err = run("--list", "--format", "json")
	require.NoError(t, err)
	require.JSONEq(t, `{"current":[
		{"resource":{"resource_type":"CLUSTER","name":"kafka-cluster","pattern_type":"LITERAL"},"acls":[
			{"principal":"User:app","host":"*","operation":"IDEMPOTENT_WRITE","permission_type":"ALLOW"}]},
		{"resource":{"resource_type":"TOPIC","name":"pay","pattern_type":"PREFIXED"},"acls":[
			{"principal":"User:app","host":"*","operation":"CREATE","permission_type":"ALLOW"},
			{"principal":"User:app","host":"*","operation":"DESCRIBE","permission_type":"ALLOW"},
			{"principal":"User:app","host":"*","operation":"WRITE","permission_type":"ALLOW"}]}]}`, out)
}
