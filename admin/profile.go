package admin

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
)

// Profile is one named connection profile of the qk config file:
//
//	# $XDG_CONFIG_HOME/qk/qk.yaml (default ~/.config/qk/qk.yaml)
//	current: prod
//	profiles:
//	  prod:
//	    brokers: [kafka-1:9092, kafka-2:9092]
//	    timeout: 5s
//	    client:
//	      client.id: ops
//
// Client settings are what -X takes, TLS and SASL too:
//
//	client:
//	  security.protocol: sasl_ssl
//	  sasl.mechanism: SCRAM-SHA-512
//	  sasl.username: ops
//	  sasl.password: "..."
//	  ssl.ca.location: /etc/kafka/ca.pem
//
// Profile names are matched without regard to case.
type Profile struct {
	Brokers []string          `mapstructure:"brokers"`
	Timeout time.Duration     `mapstructure:"timeout"`
	Client  map[string]string `mapstructure:"client"`
}

// ConfigPath is the qk config file: $XDG_CONFIG_HOME/qk/qk.yaml, else
// ~/.config/qk/qk.yaml. Empty if neither can be determined.
func ConfigPath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "qk", "qk.yaml")
}

// profileKeyDelim keeps dotted client setting names (client.id) flat.
const profileKeyDelim = "::"

// LoadProfile reads the profile name from the config file at path; an empty
// name means the file's `current`. It returns nil and no error when no
// profile is asked for, or the file does not exist and no name was given.
// A malformed file or an unknown profile is an error of one line.
func LoadProfile(path, name string) (*Profile, error) {
	if path == "" {
		if name != "" {
			return nil, fmt.Errorf("profile %q: no config file (set $XDG_CONFIG_HOME or $HOME)", name)
		}
		return nil, nil
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if name != "" {
			return nil, fmt.Errorf("profile %q: config file %s does not exist", name, path)
		}
		return nil, nil
	}
	v := viper.NewWithOptions(viper.KeyDelimiter(profileKeyDelim))
	v.SetConfigFile(path)
	v.SetConfigType("yaml")
	if err := v.ReadInConfig(); err != nil {
		return nil, fmt.Errorf("config %s: %s", path, oneLine(err))
	}
	for _, k := range v.AllKeys() {
		top, _, _ := strings.Cut(k, profileKeyDelim)
		if top != "current" && top != "profiles" {
			return nil, fmt.Errorf("config %s: unknown key %q (want current, profiles)", path, top)
		}
		if err := checkSecret(v, k); err != nil {
			return nil, fmt.Errorf("config %s: %w", path, err)
		}
	}
	if name == "" {
		name = v.GetString("current")
		if name == "" {
			return nil, nil
		}
	}
	var profiles map[string]Profile
	err := v.UnmarshalKey("profiles", &profiles, func(c *mapstructure.DecoderConfig) { c.ErrorUnused = true })
	if err != nil {
		return nil, fmt.Errorf("config %s: profiles: %s", path, oneLine(err))
	}
	p, ok := profiles[strings.ToLower(name)]
	if !ok {
		names := make([]string, 0, len(profiles))
		for n := range profiles {
			names = append(names, n)
		}
		sort.Strings(names)
		have := "none"
		if len(names) > 0 {
			have = strings.Join(names, ", ")
		}
		return nil, fmt.Errorf("profile %q not found in %s (profiles: %s)", name, path, have)
	}
	return &p, nil
}

func oneLine(err error) string {
	return strings.Join(strings.Fields(err.Error()), " ")
}

// checkSecret refuses a secret client setting (sasl.password, ...) whose
// value is not a plain string, before the decoder does: its error would
// quote the value.
func checkSecret(v *viper.Viper, key string) error {
	parts := strings.Split(key, profileKeyDelim)
	if len(parts) < 4 || parts[0] != "profiles" || parts[2] != "client" || !IsSecret(parts[3]) {
		return nil
	}
	switch v.Get(key).(type) {
	case string, int, int64, float64, bool:
		if len(parts) == 4 {
			return nil
		}
	}
	return fmt.Errorf("profile %s: client %s: want a string (quote it)", parts[1], parts[3])
}
