package main

import (
	"compress/gzip"
	"io"
	"os"
	"slices"
	"strings"
)

// ktlsProbe is what this machine says about kernel TLS.
type ktlsProbe struct {
	ulps      []string // /proc/sys/net/ipv4/tcp_available_ulp
	ulpErr    string   // why that could not be read
	configTLS string   // the CONFIG_TLS line of /proc/config.gz, or ""
}

// available says whether the kernel offers the "tls" upper-layer
// protocol that setsockopt(TCP_ULP, "tls") needs.
func (k ktlsProbe) available() bool { return slices.Contains(k.ulps, "tls") }

// probeKTLS reads the ULPs the kernel offers and, when the kernel
// exports its configuration, its CONFIG_TLS line.
func probeKTLS() ktlsProbe {
	var k ktlsProbe
	if b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_ulp"); err != nil {
		k.ulpErr = err.Error()
	} else {
		k.ulps = strings.Fields(string(b))
	}
	k.configTLS = kernelConfig("CONFIG_TLS")
	return k
}

// kernelConfig is the line of /proc/config.gz that sets name ("name=y",
// or "# name is not set"), or "" when the kernel does not export it.
func kernelConfig(name string) string {
	f, err := os.Open("/proc/config.gz")
	if err != nil {
		return ""
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return ""
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return ""
	}
	return configLine(string(b), name)
}

// configLine finds name's line in a kernel configuration.
func configLine(cfg, name string) string {
	for line := range strings.Lines(cfg) {
		line = strings.TrimSpace(line)
		if strings.HasPrefix(line, name+"=") || line == "# "+name+" is not set" {
			return line
		}
	}
	return ""
}
