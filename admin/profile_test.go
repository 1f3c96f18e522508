package admin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"
)

const testConfig = `current: dev
profiles:
  dev:
    brokers: [dev-1:9092]
  prod:
    brokers: [prod-1:9092, prod-2:9092]
    timeout: 5s
    client:
      client.id: ops
      retries: "3"
`

// setup points $XDG_CONFIG_HOME at a temp dir holding config (none if
// empty) and clears the environment the options read.
func setup(t *testing.T, config string) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", dir)
	t.Setenv("QK_BROKERS", "")
	t.Setenv("QK_PROFILE", "")
	if config != "" {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, "qk"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "qk", "qk.yaml"), []byte(config), 0o644))
	}
}

// resolved parses args as a command's connection flags and resolves them.
func resolved(t *testing.T, args ...string) (*Options, error) {
	t.Helper()
	var o Options
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	o.AddFlags(fs)
	require.NoError(t, fs.Parse(args))
	return &o, o.Resolve()
}

func TestConfigPath(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x")
	require.Equal(t, "/x/qk/qk.yaml", ConfigPath())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", "/home/u")
	require.Equal(t, "/home/u/.config/qk/qk.yaml", ConfigPath())
}

func TestProfileMissingFileIsFine(t *testing.T) {
	setup(t, "")
	o, err := resolved(t)
	require.NoError(t, err)
	require.Equal(t, []string{DefaultBrokers}, o.Brokers)
	require.Equal(t, DefaultTimeout, o.Timeout)
	require.Empty(t, o.Settings)

	_, err = resolved(t, "--profile", "prod")
	require.ErrorContains(t, err, `profile "prod": config file `)
	require.ErrorContains(t, err, "does not exist")
}

func TestProfileCurrent(t *testing.T) {
	setup(t, testConfig)
	o, err := resolved(t)
	require.NoError(t, err)
	require.Equal(t, []string{"dev-1:9092"}, o.Brokers)
	require.Equal(t, DefaultTimeout, o.Timeout)
}

func TestProfileNamed(t *testing.T) {
	setup(t, testConfig)
	o, err := resolved(t, "--profile", "prod")
	require.NoError(t, err)
	require.Equal(t, []string{"prod-1:9092", "prod-2:9092"}, o.Brokers)
	require.Equal(t, 5*time.Second, o.Timeout)
	require.Equal(t, []string{"client.id=ops", "retries=3"}, o.Settings)
	_, err = o.kgoOpts()
	require.NoError(t, err)

	// $QK_PROFILE names it too; the flag wins over it.
	t.Setenv("QK_PROFILE", "PROD")
	o, err = resolved(t)
	require.NoError(t, err)
	require.Equal(t, []string{"prod-1:9092", "prod-2:9092"}, o.Brokers)
	o, err = resolved(t, "--profile", "dev")
	require.NoError(t, err)
	require.Equal(t, []string{"dev-1:9092"}, o.Brokers)
}

func TestProfilePrecedence(t *testing.T) {
	setup(t, testConfig)
	// Flags win over everything; -X comes after the profile's settings.
	t.Setenv("QK_BROKERS", "env:9092")
	o, err := resolved(t, "--profile", "prod", "-b", "flag:9092", "--timeout", "2s", "-X", "client.id=me")
	require.NoError(t, err)
	require.Equal(t, []string{"flag:9092"}, o.Brokers)
	require.Equal(t, 2*time.Second, o.Timeout)
	require.Equal(t, []string{"client.id=ops", "retries=3", "client.id=me"}, o.Settings)

	// $QK_BROKERS wins over the profile, which still sets the timeout.
	o, err = resolved(t, "--profile", "prod")
	require.NoError(t, err)
	require.Equal(t, []string{"env:9092"}, o.Brokers)
	require.Equal(t, 5*time.Second, o.Timeout)
}

func TestProfileErrors(t *testing.T) {
	for _, tc := range []struct {
		name, config string
		args         []string
		want         string
	}{
		{"unknown profile", testConfig, []string{"--profile", "nope"}, `profile "nope" not found in `},
		{"unknown current", "current: gone\nprofiles: {}\n", nil, `profile "gone" not found in `},
		{"malformed", "profiles: [\n  a: b\n", nil, "config "},
		{"bad timeout", "current: a\nprofiles:\n  a:\n    timeout: soon\n", nil, "profiles: "},
		{"unknown field", "current: a\nprofiles:\n  a:\n    broker: [x]\n", nil, "profiles: "},
		{"unknown key", "profile: a\n", nil, `unknown key "profile"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			setup(t, tc.config)
			_, err := resolved(t, tc.args...)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.NotContains(t, err.Error(), "\n", "one line")
			t.Log(err)
		})
	}
}

func TestProfileBadClientSetting(t *testing.T) {
	setup(t, "current: a\nprofiles:\n  a:\n    client:\n      nope: 1\n")
	o, err := resolved(t)
	require.NoError(t, err)
	_, err = o.kgoOpts()
	require.ErrorContains(t, err, "nope: unknown client setting")
	require.False(t, strings.Contains(err.Error(), "\n"))
}
