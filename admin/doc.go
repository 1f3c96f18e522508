// Package admin holds the client-side administration behind `qk topic`,
// `qk config`, `qk group` and `qk cluster`, built on franz-go's kadm. It
// reaches brokers only over the Kafka protocol, so it works against qk and
// any other Kafka-compatible cluster. Commands get views (TopicList,
// TopicDescriptions, ConfigList, ClusterInfo, ...) and write them with
// Print in text, json or yaml.
package admin
