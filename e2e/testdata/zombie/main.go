// Command zombie is a transactional producer driven line by line on
// stdin, for e2e's zombie-fencing test: a process the test can SIGSTOP
// mid-transaction and resume after another instance took its id.
//
//	zombie BROKERS TRANSACTIONAL_ID TOPIC TAG TIMEOUT_MS
//
// Commands: "begin", "produce N" (N records "TAG-i", flushed), "commit",
// "abort". Each answers one line: "ok", or "err " and the error.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

func main() {
	if len(os.Args) != 6 {
		fmt.Fprintln(os.Stderr, "usage: zombie BROKERS TRANSACTIONAL_ID TOPIC TAG TIMEOUT_MS")
		os.Exit(2)
	}
	brokers, id, topic, tag := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	timeoutMs, _ := strconv.Atoi(os.Args[5])
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(brokers, ",")...), kgo.TransactionalID(id),
		kgo.TransactionTimeout(time.Duration(timeoutMs)*time.Millisecond), kgo.DefaultProduceTopic(topic),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProduceRequestTimeout(10*time.Second),
		kgo.RecordDeliveryTimeout(20*time.Second))
	if err != nil {
		fmt.Println("err", err)
		os.Exit(1)
	}
	defer cl.Close()
	n := 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var err error
		switch f[0] {
		case "begin":
			err = cl.BeginTransaction()
		case "produce":
			count, _ := strconv.Atoi(f[1])
			for range count {
				r := &kgo.Record{Value: []byte(fmt.Sprintf("%s-%d", tag, n)), Partition: int32(n % 2)}
				n++
				if perr := cl.ProduceSync(ctx, r).FirstErr(); perr != nil && err == nil {
					err = perr
				}
			}
		case "commit", "abort":
			err = cl.EndTransaction(ctx, kgo.TransactionEndTry(f[0] == "commit"))
		default:
			err = fmt.Errorf("unknown command %q", f[0])
		}
		cancel()
		if err != nil {
			fmt.Println("err", err)
		} else {
			fmt.Println("ok")
		}
	}
}
