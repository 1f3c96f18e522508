package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/admin"
)

// kafkaToolConn is the connection of a command that stands in for one of
// Kafka's shell tools (kafka-log-dirs.sh, kafka-delete-records.sh,
// kafka-get-offsets.sh, kafka-broker-api-versions.sh): Kafka's
// --bootstrap-server and --command-config beside qk's -b, -X, --profile
// and --request-timeout, so an operator's scripts run unchanged and qk's
// usual connection settings still apply.
type kafkaToolConn struct {
	perfConn
	commandConfig string
}

// addFlags binds the connection flags. qk's --timeout is named
// --request-timeout here, as on reassign-partitions, because that is the
// name --command-config's request.timeout.ms gives way to.
func (k *kafkaToolConn) addFlags(cmd *cobra.Command) {
	k.perfConn.addFlags(cmd, map[string]string{"timeout": "request-timeout"})
	cmd.Flags().StringVar(&k.commandConfig, "command-config", "", "Property file containing configs to be passed to Admin Client.")
	_ = cmd.MarkFlagFilename("command-config", "properties", "conf", "config")
}

// dial reads --command-config, if given, and connects; Dial fails with
// one line naming the address when no seed broker answers.
func (k *kafkaToolConn) dial(cmd *cobra.Command) (*admin.Client, error) {
	var propBrokers []string
	if k.commandConfig != "" {
		var err error
		if propBrokers, err = applyCommandConfig(cmd.Flags(), &k.Options, k.commandConfig); err != nil {
			return nil, err
		}
	}
	return k.perfConn.dial(cmd, propBrokers)
}

// javaExceptionNames are the Java client's exception classes for the error
// codes whose class is not the code's name in CamelCase with "Exception"
// (see javaExceptionName). They come from Kafka's Errors enum.
var javaExceptionNames = map[int16]string{
	-1: "UnknownServerException",            // UNKNOWN_SERVER_ERROR
	2:  "CorruptRecordException",            // CORRUPT_MESSAGE
	6:  "NotLeaderOrFollowerException",      // NOT_LEADER_OR_FOLLOWER (kerr: NOT_LEADER_FOR_PARTITION)
	7:  "TimeoutException",                  // REQUEST_TIMED_OUT
	10: "RecordTooLargeException",           // MESSAGE_TOO_LARGE
	11: "ControllerMovedException",          // STALE_CONTROLLER_EPOCH
	12: "OffsetMetadataTooLarge",            // OFFSET_METADATA_TOO_LARGE
	18: "RecordBatchTooLargeException",      // RECORD_LIST_TOO_LARGE
	36: "TopicExistsException",              // TOPIC_ALREADY_EXISTS
	40: "InvalidConfigurationException",     // INVALID_CONFIG
	45: "OutOfOrderSequenceException",       // OUT_OF_ORDER_SEQUENCE_NUMBER
	46: "DuplicateSequenceException",        // DUPLICATE_SEQUENCE_NUMBER
	49: "InvalidPidMappingException",        // INVALID_PRODUCER_ID_MAPPING
	50: "InvalidTxnTimeoutException",        // INVALID_TRANSACTION_TIMEOUT
	68: "GroupNotEmptyException",            // NON_EMPTY_GROUP
	87: "InvalidRecordException",            // INVALID_RECORD (org.apache.kafka.common)
	96: "FeatureUpdateFailedException",      // FEATURE_UPDATE_FAILED
	97: "PrincipalDeserializationException", // PRINCIPAL_DESERIALIZATION_FAILURE
}

// javaExceptionName is the fully qualified name of the exception class the
// Java client raises for a Kafka error, as Kafka's tools print it
// (getClass().getName()): "org.apache.kafka.common.errors.KafkaStorageException"
// for KAFKA_STORAGE_ERROR. Codes not in javaExceptionNames follow Kafka's
// naming: the code's words in CamelCase, without a trailing ERROR,
// EXCEPTION or FAILED, and "Exception" (TOPIC_AUTHORIZATION_FAILED is
// TopicAuthorizationException).
func javaExceptionName(ke *kerr.Error) string {
	pkg := "org.apache.kafka.common.errors."
	if ke.Code == kerr.InvalidRecord.Code {
		pkg = "org.apache.kafka.common."
	}
	if n, ok := javaExceptionNames[ke.Code]; ok {
		return pkg + n
	}
	words := strings.Split(ke.Message, "_")
	if n := len(words); n > 1 {
		switch words[n-1] {
		case "ERROR", "EXCEPTION", "FAILED":
			words = words[:n-1]
		}
	}
	var b strings.Builder
	b.WriteString(pkg)
	for _, w := range words {
		if w == "" {
			continue
		}
		b.WriteString(w[:1])
		b.WriteString(strings.ToLower(w[1:]))
	}
	b.WriteString("Exception")
	return b.String()
}

// javaExceptionText is err as Kafka's tools print a failed future's
// ExecutionException message: "<exception class>: <message>", the message
// being Kafka's default for the code. An error that is not a Kafka error
// code (a network failure) is printed as it is.
func javaExceptionText(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return fmt.Sprintf("%s: %s", javaExceptionName(ke), ke.Description)
	}
	return err.Error()
}
