package benchproc

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Ballast is a file that fills the machine's free memory with page
// cache, so that the brokers' writes reuse page-cache pages (the kernel
// evicts the ballast's clean pages) instead of taking free ones.
//
// Why: this VM reports freed memory to its host (virtio-balloon free page
// reporting), and the first touch of such a page faults in the host,
// which makes a page-cache write up to ~5x slower (reference/
// machine-limits.md). A benchmark that deletes each run's topic frees its
// pages and pays that again in the next run, and more for the runs that
// write more (RF 3 writes three times the data of RF 1), which skews a
// ratio between them. With the ballast in place, every run writes into
// recycled pages, as a long-running broker's page cache does.
type Ballast struct {
	Path  string
	Bytes int64
}

// WriteBallast writes a ballast file at path of the free memory less
// leave bytes (nothing when that is not positive), fsyncs it so that its
// pages are clean (cheap to evict), and returns it; Remove deletes it.
func WriteBallast(path string, leave int64) (*Ballast, error) {
	free, err := memFree()
	if err != nil {
		return nil, err
	}
	b := &Ballast{Path: path, Bytes: free - leave}
	if b.Bytes <= 0 {
		b.Bytes = 0
		return b, nil
	}
	b.Bytes -= b.Bytes % (1 << 20)
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	block := bytes.Repeat([]byte{0x5a}, 1<<20)
	for n := int64(0); n < b.Bytes; n += int64(len(block)) {
		if _, err := f.Write(block); err != nil {
			f.Close()
			os.Remove(path)
			return nil, fmt.Errorf("ballast: %w", err)
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("ballast: %w", err)
	}
	return b, f.Close()
}

// Remove deletes the ballast file.
func (b *Ballast) Remove() error {
	if b == nil || b.Bytes == 0 {
		return nil
	}
	return os.Remove(b.Path)
}

// memFree is MemFree of /proc/meminfo in bytes.
func memFree() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseMemFree(data)
}

func parseMemFree(data []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemFree:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("meminfo: %q: %w", sc.Text(), err)
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("meminfo: no MemFree line")
}
