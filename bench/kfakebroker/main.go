// Command kfakebroker runs one franz-go kfake broker as a process of its own,
// for the benchmark suite (bench/suite) to compare qk against.
//
// Why a separate process: the suite charges each broker the CPU time the
// kernel accounts to its PID (/proc/<pid>/stat). An in-process kfake would
// share the suite's PID, and its CPU would be mixed with the suite's own.
//
// It plays one of three roles:
//
//	peer       a broker with an on-disk log (kfake.DataDir under -dir), the
//	           same kind of work qk does; -sync fsyncs every batch
//	           (kfake.SyncWrites), for the suite's fsync row
//	blackhole  the producer's ceiling: acknowledges every produce without
//	           storing it (kfake.BlackholeProduce), so a producer against it
//	           measures the client and the loopback, not a broker
//	synthetic  the consumer's ceiling: answers every fetch from one canned
//	           batch (kfake.SyntheticFetch) of -record-bytes values, all
//	           random bytes (incompressible), compressed with -compression
//
// It listens on -addr (port 0 picks a free port), prints one line
// "listening on ADDR" on stdout once clients can connect, and runs until
// SIGTERM or SIGINT. Topics are auto-created with -partitions partitions,
// or created by the client with CreateTopics.
//
//	go run ./bench/kfakebroker -mode peer -dir /tmp/kf
//	go run ./bench/kfakebroker -mode synthetic -record-bytes 1024 -compression lz4
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "kfakebroker:", err)
		os.Exit(1)
	}
}

// config is the command line.
type config struct {
	addr        string
	mode        string
	dir         string
	sync        bool
	recordBytes int
	compression string
	partitions  int
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	opts, err := c.opts()
	if err != nil {
		return err
	}
	// Catch the signals before the first client can connect, so a stop
	// sent right after "listening on" is never the default (fatal) action.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)

	cl, err := kfake.NewCluster(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	if _, err := fmt.Fprintf(stdout, "listening on %s\n", cl.ListenAddrs()[0]); err != nil {
		return err
	}
	<-sig
	return nil
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("kfakebroker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&c.addr, "addr", "127.0.0.1:0", "address to listen on; port 0 picks a free one (printed)")
	fs.StringVar(&c.mode, "mode", "peer", "peer (on-disk log), blackhole (producer ceiling) or synthetic (consumer ceiling)")
	fs.StringVar(&c.dir, "dir", "", "peer: the data directory (kfake.DataDir); required for peer")
	fs.BoolVar(&c.sync, "sync", false, "peer: fsync every batch (kfake.SyncWrites)")
	fs.IntVar(&c.recordBytes, "record-bytes", 100, "synthetic: bytes per value of the canned batch")
	fs.StringVar(&c.compression, "compression", "none", "synthetic: codec of the canned batch, none or lz4")
	fs.IntVar(&c.partitions, "partitions", 1, "partitions of auto-created topics")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	return c, nil
}

// opts turns the command line into kfake options, refusing flags that mean
// nothing in the chosen mode (a -sync on the blackhole would measure
// something other than what the caller thinks).
func (c config) opts() ([]kfake.Opt, error) {
	if c.partitions < 1 {
		return nil, fmt.Errorf("-partitions %d: want at least 1", c.partitions)
	}
	addr := c.addr
	opts := []kfake.Opt{
		// One port means one broker; ListenFn makes it listen on -addr
		// rather than kfake's fixed 127.0.0.1.
		kfake.Ports(0),
		kfake.ListenFn(func(network, _ string) (net.Listener, error) { return net.Listen(network, addr) }),
		kfake.AllowAutoTopicCreation(),
		kfake.DefaultNumPartitions(c.partitions),
	}
	if c.mode != "peer" && (c.dir != "" || c.sync) {
		return nil, errors.New("-dir and -sync are for -mode peer")
	}
	if c.mode != "synthetic" && (c.recordBytes != 100 || c.compression != "none") {
		return nil, errors.New("-record-bytes and -compression are for -mode synthetic")
	}
	switch c.mode {
	case "peer":
		if c.dir == "" {
			return nil, errors.New("-mode peer needs -dir")
		}
		opts = append(opts, kfake.DataDir(c.dir))
		if c.sync {
			opts = append(opts, kfake.SyncWrites())
		}
	case "blackhole":
		opts = append(opts, kfake.BlackholeProduce())
	case "synthetic":
		codec, err := codecOf(c.compression)
		if err != nil {
			return nil, err
		}
		if c.recordBytes < 1 {
			return nil, fmt.Errorf("-record-bytes %d: want at least 1", c.recordBytes)
		}
		// RandomFrac 1: every value byte random, as the suite's producers
		// send, so the canned batch costs the consumer what a real one
		// would (lz4 cannot shrink it, but the consumer still runs it).
		opts = append(opts, kfake.SyntheticFetch(kfake.SyntheticBatch{
			RecordBytes: c.recordBytes,
			RandomFrac:  1,
			Compression: codec,
		}))
	default:
		return nil, fmt.Errorf("-mode %q: want peer, blackhole or synthetic", c.mode)
	}
	return opts, nil
}

func codecOf(name string) (kgo.CompressionCodec, error) {
	switch name {
	case "none":
		return kgo.NoCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("-compression %q: want none or lz4", name)
}
