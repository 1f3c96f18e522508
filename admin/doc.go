// Package admin holds the client-side administration behind `qk topic`,
// `qk config`, `qk group`, `qk cluster`, `qk leader-election` and
// `qk reassign-partitions`, built on franz-go's kadm. It reaches brokers
// only over the Kafka protocol, so it works against qk and any other
// Kafka-compatible cluster. Most commands get views (TopicList,
// TopicDescriptions, ConfigList, ClusterInfo, ...) and write them with
// Print in text, json or yaml; reassign-partitions instead writes Kafka's
// kafka-reassign-partitions.sh lines as it goes (see reassign.go), since
// operators' scripts read those lines and the rollback JSON must be out
// before anything changes.
package admin
