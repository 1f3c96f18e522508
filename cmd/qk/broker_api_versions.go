package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func init() { subcommands = append(subcommands, newBrokerAPIVersionsCmd) }

// newBrokerAPIVersionsCmd is kafka-broker-api-versions.sh: every broker's
// ApiVersions, in the lines of Kafka's NodeApiVersions.toString(true).
func newBrokerAPIVersionsCmd() *cobra.Command {
	var conn kafkaToolConn
	cmd := &cobra.Command{
		Use:   "broker-api-versions --bootstrap-server HOST:PORT",
		Short: "Print the API versions each broker supports (kafka-broker-api-versions)",
		Long: `Print, for every broker of the cluster, the versions of each API it supports, as
kafka-broker-api-versions.sh does, with Kafka's API names:

  127.0.0.1:9092 (id: 1 rack: null) -> (
  	Produce(0): 0 to 11 [usable: 11],
  	...
  	DescribeCluster(60): 0 to 1 [usable: 1]
  )

"usable" is the highest version both this client (franz-go) and the broker
support; "[unusable: node too new]" means the broker's oldest version is newer
than the client's newest. An API this client knows that a Kafka broker may
serve but this one does not advertise is "UNSUPPORTED"; an API the broker
advertises that the client does not know is UNKNOWN(key). A broker that does
not answer is "-> ERROR: ...". The cluster is --bootstrap-server (or qk's -b,
$QK_BROKERS or --profile); --command-config reads Kafka admin client
properties (see reassign-partitions).`,
		Example: `  qk broker-api-versions --bootstrap-server 127.0.0.1:9092`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := conn.dial(cmd)
			if err != nil {
				return err
			}
			defer c.Close()
			ctx, cancel := c.Context(cmd.Context())
			defer cancel()
			brokers, err := c.ListBrokers(ctx)
			if err != nil {
				return fmt.Errorf("list brokers: %w", err)
			}
			slices.SortFunc(brokers, func(a, b kadm.BrokerDetail) int { return cmp.Compare(a.NodeID, b.NodeID) })
			w := cmd.OutOrStdout()
			failed := 0
			for _, b := range brokers {
				rack := "null"
				if b.Rack != nil {
					rack = *b.Rack
				}
				fmt.Fprintf(w, "%s:%d (id: %d rack: %s) -> ", b.Host, b.Port, b.NodeID, rack)
				req := kmsg.NewPtrApiVersionsRequest()
				req.ClientSoftwareName, req.ClientSoftwareVersion = "qk", apiVersionsSoftwareVersion()
				kr, err := c.Kgo().Broker(int(b.NodeID)).Request(ctx, req)
				if err == nil {
					err = kerr.ErrorForCode(kr.(*kmsg.ApiVersionsResponse).ErrorCode)
				}
				if err != nil {
					failed++
					fmt.Fprintf(w, "ERROR: %s\n", javaExceptionText(err))
					continue
				}
				writeNodeAPIVersions(w, kr.(*kmsg.ApiVersionsResponse).ApiKeys)
			}
			if failed > 0 {
				return fmt.Errorf("broker-api-versions: %d of %d brokers did not answer", failed, len(brokers))
			}
			return nil
		},
	}
	conn.addFlags(cmd)
	return cmd
}

// apiVersionsSoftwareVersion is the client_software_version qk sends:
// Kafka allows only [a-zA-Z0-9.-], starting and ending alphanumeric.
func apiVersionsSoftwareVersion() string {
	v := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, qkVersion())
	return strings.Trim(v, ".-")
}

// writeNodeAPIVersions prints keys as Kafka's NodeApiVersions.toString(true)
// does: "(", then one tab-indented entry per API key in key order, each but
// the last followed by a comma, then ")".
func writeNodeAPIVersions(w io.Writer, keys []kmsg.ApiVersionsResponseApiKey) {
	text := map[int16]string{}
	for _, k := range keys {
		text[k.ApiKey] = apiVersionText(k)
	}
	for key := range int16(kmsg.MaxKey + 1) {
		if _, ok := text[key]; !ok && kmsg.RequestForKey(key) != nil && brokerServedAPI(key) {
			text[key] = fmt.Sprintf("%s(%d): UNSUPPORTED", kafkaAPIName(key), key)
		}
	}
	order := make([]int16, 0, len(text))
	for k := range text {
		order = append(order, k)
	}
	slices.Sort(order)
	lines := make([]string, len(order))
	for i, k := range order {
		lines[i] = text[k]
	}
	fmt.Fprintf(w, "(\n\t%s\n)\n", strings.Join(lines, ",\n\t"))
}

// apiVersionText is one entry: "Name(key): min to max [usable: v]", the
// range a single number when min = max, and UNKNOWN(key) for a key this
// client does not know.
func apiVersionText(k kmsg.ApiVersionsResponseApiKey) string {
	req := kmsg.RequestForKey(k.ApiKey)
	name := "UNKNOWN"
	if req != nil {
		name = kafkaAPIName(k.ApiKey)
	}
	s := fmt.Sprintf("%s(%d): %d", name, k.ApiKey, k.MinVersion)
	if k.MinVersion != k.MaxVersion {
		s = fmt.Sprintf("%s to %d", s, k.MaxVersion)
	}
	if req == nil {
		return s
	}
	// franz-go encodes every version of a request from 0 to its newest,
	// so the client's range starts at 0 and "node too old" cannot happen.
	latest := req.MaxVersion()
	if latest < k.MinVersion {
		return s + " [unusable: node too new]"
	}
	return fmt.Sprintf("%s [usable: %d]", s, min(latest, k.MaxVersion))
}

// kafkaAPINames are Kafka's names (ApiKeys) for the keys franz-go spells
// otherwise; every other key has the same name in both.
var kafkaAPINames = map[int16]string{
	4:  "LeaderAndIsr",
	17: "SaslHandshake",
	22: "InitProducerId",
	29: "DescribeAcls",
	30: "CreateAcls",
	31: "DeleteAcls",
	36: "SaslAuthenticate",
	45: "AlterPartitionReassignments",
	50: "DescribeUserScramCredentials",
	51: "AlterUserScramCredentials",
	67: "AllocateProducerIds",
}

func kafkaAPIName(key int16) string {
	if n, ok := kafkaAPINames[key]; ok {
		return n
	}
	return kmsg.NameForKey(key)
}

// controllerOnlyAPIs are the keys a Kafka broker never serves: requests
// between KRaft controllers and brokers, or those ZooKeeper-mode brokers
// sent one another (LeaderAndIsr, StopReplica, UpdateMetadata,
// ControlledShutdown; gone from Kafka 4.0's broker APIs). Kafka's tool lists
// as UNSUPPORTED only the APIs a broker listener may serve, so these are not
// shown unless a broker advertises them (qk, which keeps ZooKeeper mode's
// inter-broker requests, does).
var controllerOnlyAPIs = []int16{4, 5, 6, 7, 52, 53, 54, 56, 58, 59, 62, 63, 67, 70, 73, 82, 94}

func brokerServedAPI(key int16) bool { return !slices.Contains(controllerOnlyAPIs, key) }
