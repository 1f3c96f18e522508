package api

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/qk-project/qk/broker/config"
	"github.com/qk-project/qk/broker/controller"
	"github.com/qk-project/qk/broker/log"
	"github.com/qk-project/qk/broker/metadata"
	"github.com/qk-project/qk/broker/record"
	"github.com/qk-project/qk/broker/replica"
)

// Errors of this package that have no home below it.
var (
	// errUnknownTopicID: a request named a topic id no topic has.
	errUnknownTopicID = errors.New("api: unknown topic id")
	// errInvalidTopic: a topic name that breaks Kafka's rules.
	errInvalidTopic = errors.New("api: invalid topic name")
	// errInvalidRecord: a produced record set that is not exactly one v2
	// batch, or a batch whose records do not decode.
	errInvalidRecord = errors.New("api: invalid record")
	// errUnsupportedCompression: zstd in a Produce request older than v7.
	errUnsupportedCompression = errors.New("api: unsupported compression type")
	// errInvalidRequest: a request that is well formed but makes no sense
	// (duplicate topics, bad acks, ...).
	errInvalidRequest = errors.New("api: invalid request")
	// errTopicDeletionDisabled: delete.topic.enable=false.
	errTopicDeletionDisabled = errors.New("api: topic deletion is disabled")
	// errInvalidConfig: a config that the request may not set.
	errInvalidConfig = errors.New("api: invalid config")
	// errLeaderNotAvailable: a topic exists but its partition has no
	// leader yet (or is being created on another broker).
	errLeaderNotAvailable = errors.New("api: leader not available")
)

// errorCode is the one map from internal errors to Kafka error codes.
// Order matters where errors wrap several sentinels: the most specific
// case is first (a log.ErrInvalidBatch wrapping record.ErrBadCRC is
// CORRUPT_MESSAGE).
func errorCode(err error) int16 {
	var ke *kerr.Error
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ke):
		return ke.Code

	// Produce and the log.
	case errors.Is(err, record.ErrBadCRC):
		return kerr.CorruptMessage.Code
	case errors.Is(err, errUnsupportedCompression):
		return kerr.UnsupportedCompressionType.Code
	case errors.Is(err, errInvalidRecord), errors.Is(err, log.ErrInvalidBatch),
		errors.Is(err, record.ErrInvalidRecord), errors.Is(err, record.ErrBadMagic),
		errors.Is(err, record.ErrBadSize), errors.Is(err, record.ErrBadCodec),
		errors.Is(err, record.ErrShortBuffer):
		return kerr.InvalidRecord.Code
	case errors.Is(err, log.ErrBatchTooLarge):
		return kerr.MessageTooLarge.Code
	case errors.Is(err, log.ErrOffsetOutOfRange):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, log.ErrAboveHighWatermark):
		return kerr.OffsetOutOfRange.Code
	case errors.Is(err, log.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber.Code
	case errors.Is(err, log.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch.Code
	case errors.Is(err, log.ErrDuplicateSequence):
		return kerr.DuplicateSequenceNumber.Code
	case errors.Is(err, log.ErrTransactionCoordinatorFenced):
		return kerr.TransactionCoordinatorFenced.Code
	case errors.Is(err, log.ErrInvalidTxnState):
		return kerr.InvalidTxnState.Code
	case errors.Is(err, log.ErrUnknownProducerID):
		return kerr.UnknownProducerID.Code
	case errors.Is(err, log.ErrBadConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, log.ErrTruncated):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, log.ErrClosed), errors.Is(err, log.ErrFailed), errors.Is(err, log.ErrCorruptLog), errors.Is(err, log.ErrCorruptIndex),
		errors.Is(err, log.ErrTooFewDescriptors), errors.Is(err, replica.ErrOffline), errors.Is(err, log.ErrLogDirOffline):
		return kerr.KafkaStorageError.Code

	// Partitions hosted here.
	case errors.Is(err, replica.ErrUnknownTopicOrPartition):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, replica.ErrNotLeaderOrFollower):
		return kerr.NotLeaderForPartition.Code
	case errors.Is(err, replica.ErrNotEnoughReplicas):
		return kerr.NotEnoughReplicas.Code
	case errors.Is(err, replica.ErrNotEnoughReplicasAfterAppend):
		return kerr.NotEnoughReplicasAfterAppend.Code
	case errors.Is(err, replica.ErrInconsistentTopicID):
		return kerr.InconsistentTopicID.Code
	case errors.Is(err, replica.ErrFencedLeaderEpoch):
		return kerr.FencedLeaderEpoch.Code
	case errors.Is(err, replica.ErrUnknownLeaderEpoch):
		return kerr.UnknownLeaderEpoch.Code

	// Topics and the controller.
	case errors.Is(err, controller.ErrNotController):
		return kerr.NotController.Code
	case errors.Is(err, controller.ErrTopicExists):
		return kerr.TopicAlreadyExists.Code
	case errors.Is(err, controller.ErrUnknownTopic):
		return kerr.UnknownTopicOrPartition.Code
	case errors.Is(err, controller.ErrTopicCollision), errors.Is(err, errInvalidTopic), errors.Is(err, log.ErrBadTopic):
		return kerr.InvalidTopicException.Code
	case errors.Is(err, controller.ErrInvalidPartitions):
		return kerr.InvalidPartitions.Code
	case errors.Is(err, controller.ErrInvalidReplicationFactor):
		return kerr.InvalidReplicationFactor.Code
	case errors.Is(err, controller.ErrInvalidReplicaAssignment):
		return kerr.InvalidReplicaAssignment.Code
	case errors.Is(err, errUnknownTopicID):
		return kerr.UnknownTopicID.Code
	case errors.Is(err, errTopicDeletionDisabled):
		return kerr.TopicDeletionDisabled.Code
	case errors.Is(err, errLeaderNotAvailable):
		return kerr.LeaderNotAvailable.Code

	// Configs: CreateTopics and AlterConfigs answer INVALID_CONFIG for an
	// unknown or bad topic config; a read-only or unknown broker config is
	// INVALID_REQUEST, as Kafka's AlterConfigs answers it.
	case errors.Is(err, config.ErrUnknownTopicConfig), errors.Is(err, config.ErrInvalidValue),
		errors.Is(err, errInvalidConfig):
		return kerr.InvalidConfig.Code
	case errors.Is(err, config.ErrReadOnly), errors.Is(err, config.ErrUnknownBrokerConfig),
		errors.Is(err, errInvalidRequest):
		return kerr.InvalidRequest.Code

	// The metadata store.
	case errors.Is(err, metadata.ErrProducerIDsExhausted):
		return kerr.UnknownServerError.Code
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, metadata.ErrConnectionLoss):
		return kerr.RequestTimedOut.Code
	case errors.Is(err, metadata.ErrClosed), errors.Is(err, metadata.ErrSessionExpired),
		// A wait the broker's shutdown cut (Handler.Stop): retriable, so
		// the client goes to another broker (an idempotent producer given
		// UNKNOWN_SERVER_ERROR for its InitProducerId fails every record).
		errors.Is(err, context.Canceled):
		return kerr.BrokerNotAvailable.Code
	}
	return kerr.UnknownServerError.Code
}

// errorMessage is the text Kafka puts next to a code where the protocol
// has a message field: nil for success.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
