package main

import (
	"errors"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/qk-project/qk/broker/vfs"
	"github.com/qk-project/qk/inspect"
)

func init() { subcommands = append(subcommands, newDumpSegmentCmd) }

// newDumpSegmentCmd is qk's kafka-dump-log.sh: same switches, same output
// for the files Kafka's tool knows, plus checkpoints and --json.
func newDumpSegmentCmd() *cobra.Command {
	var (
		o     inspect.Options
		files []string
	)
	cmd := &cobra.Command{
		Use:   "dump-segment [flags] FILE...",
		Short: "Print log segments, indexes, producer snapshots and checkpoint files",
		Long: `Print the content of Kafka's on-disk files, written by qk or by Apache Kafka, in the
line format of Kafka 3.3+'s kafka-dump-log.sh (kafka.tools.DumpLogSegments).

The file kind comes from the name, as in Kafka: .log (batches; with --deep-iteration
also records), .index and .timeindex (entries, each checked against the .log next to
it), .snapshot (producer state), .txnindex (aborted transactions), .checkpoint (KRaft
metadata snapshots, dumped as log content). qk also reads the
log-directory files Kafka's tool ignores: recovery-point-offset-checkpoint,
replication-offset-checkpoint, log-start-offset-checkpoint, cleaner-offset-checkpoint
("topic: T partition: P offset: O", sorted), leader-epoch-checkpoint ("epoch: E
startOffset: S"), partition.metadata ("topicId: ID"), meta.properties and
.kafka_cleanshutdown ("brokerEpoch: E"). Other
files are skipped with "Ignoring unknown file" on stderr.

Index verification findings (follower-built index entries, record-level time-index
offsets, non-consecutive offsets after compaction) go to stderr after the last file;
healthy logs produce them, so they do not change the exit status.

Exit status: 0 when every file was read in full; 1 when a file is corrupt or torn
(everything readable is printed first, then "Error: ... at position P of F: reason"),
when a batch fails its CRC check (isvalid: false), when an index has a partial
entry or no .log, or when a file cannot be read.`,
		Example: `  # Batches of a segment, as kafka-dump-log.sh --files prints them
  qk dump-segment /var/lib/kafka/orders-0/00000000000000000000.log

  # Every record with its key and value
  qk dump-segment --print-data-log orders-0/00000000000000000000.log

  # Check an index against its log without printing the entries
  qk dump-segment --verify-index-only orders-0/00000000000000000000.index

  # The broker's startup check of both indexes
  qk dump-segment --index-sanity-check orders-0/00000000000000000000.index orders-0/00000000000000000000.timeindex

  # Committed offsets and group metadata, decoded as Kafka 3.8+ does
  qk dump-segment --offsets-decoder __consumer_offsets-16/00000000000000000000.log

  # Kafka's own argument form works too
  qk dump-segment --deep-iteration --files a.log,a.index

  # One JSON object per batch, record or entry
  qk dump-segment --json --deep-iteration orders-0/00000000000000000000.log | jq .`,
		RunE: func(cmd *cobra.Command, args []string) error {
			all := append(append([]string(nil), files...), args...)
			if len(all) == 0 {
				return fmt.Errorf("dump-segment: no files: give FILE arguments or --files a,b,...")
			}
			if o.MaxMessageSize <= 0 {
				return fmt.Errorf("dump-segment: --max-message-size must be positive, got %d", o.MaxMessageSize)
			}
			if o.MaxBytes < 0 {
				return fmt.Errorf("dump-segment: --max-bytes must not be negative, got %d", o.MaxBytes)
			}
			if o.MaxBytes >= math.MaxInt32 {
				o.MaxBytes = 0 // Kafka's default, Integer.MAX_VALUE, means "no limit"
			}
			d := inspect.New(vfs.OS, cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
			err := d.Dump(all...)
			var damage *inspect.Error
			if errors.As(err, &damage) {
				// Already printed as "Error: …" where it was found; exit 1
				// without saying it twice.
				return &exitError{code: 1, err: err, reported: true}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&files, "files", nil, "comma-separated files to dump (Kafka's form; FILE arguments work too)")
	f.BoolVar(&o.DeepIteration, "deep-iteration", false, "print every record, not only the batches")
	f.BoolVar(&o.PrintDataLog, "print-data-log", false, "print record keys and values as UTF-8 text; implies --deep-iteration")
	f.BoolVar(&o.SkipRecordMetadata, "skip-record-metadata", false, "print only key and payload on record lines")
	f.BoolVar(&o.VerifyIndexOnly, "verify-index-only", false, "check index entries against the log without printing them")
	f.BoolVar(&o.IndexSanityCheck, "index-sanity-check", false, "run only the broker's startup check of .index/.timeindex files")
	f.IntVar(&o.MaxMessageSize, "max-message-size", inspect.DefaultMaxMessageSize, "bytes read behind an offset-index entry to find its batch")
	f.IntVar(&o.MaxBytes, "max-bytes", 0, "dump only the first N bytes of each .log (0: the whole file)")
	f.BoolVar(&o.OffsetsDecoder, "offsets-decoder", false, "decode __consumer_offsets keys and values as JSON (Kafka 3.8+ form); implies --print-data-log")
	f.BoolVar(&o.JSON, "json", false, "write one JSON object per batch, record or entry instead of text lines")
	return cmd
}
