package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// ConfigKey is the --config key of a flag: its name with _ for -.
func ConfigKey(flag string) string { return strings.ReplaceAll(flag, "-", "_") }

// ApplyConfig reads the JSON object in path and sets every flag of fs it
// names, except flags given on the command line, which win. The keys are the
// flags of fs (ConfigKey: --rotate-size is rotate_size), so every flag is a
// key and a new flag is one without more code; ignored lists further keys
// that are accepted and skipped (a config shared by two verbs). A value is a
// JSON string, number or boolean, as the flag would take it on the command
// line, or an array of them for a list flag. Any other key is a usage error
// listing the known ones. The "config" key itself is not accepted.
func ApplyConfig(fs *pflag.FlagSet, path string, ignored ...string) error {
	if path == "" {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return FlagErrorf("--config: %v", err)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return FlagErrorf("--config %s: %v", path, err)
	}
	flags := map[string]*pflag.Flag{}
	var known []string
	fs.VisitAll(func(f *pflag.Flag) {
		if f.Name == "config" || f.Name == "help" {
			return
		}
		flags[ConfigKey(f.Name)] = f
		known = append(known, ConfigKey(f.Name))
	})
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys) // the first error is the same on every run
	for _, k := range keys {
		f := flags[k]
		if f == nil {
			if slices.Contains(ignored, k) {
				continue
			}
			slices.Sort(known)
			return FlagErrorf("--config %s: unknown key %q (known: %s)", path, k, strings.Join(known, ", "))
		}
		if f.Changed {
			continue
		}
		if err := setFromJSON(f, raw[k]); err != nil {
			return FlagErrorf("--config %s: %s: %v", path, k, err)
		}
	}
	return nil
}

// setFromJSON sets f from one JSON value through the flag's own parser.
func setFromJSON(f *pflag.Flag, v json.RawMessage) error {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && v[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(v, &items); err != nil {
			return err
		}
		parts := make([]string, len(items))
		for i, it := range items {
			s, err := scalar(it)
			if err != nil {
				return err
			}
			parts[i] = s
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			return sv.Replace(parts)
		}
		return fmt.Errorf("--%s takes one value, not a list", f.Name)
	}
	s, err := scalar(v)
	if err != nil {
		return err
	}
	if sv, ok := f.Value.(pflag.SliceValue); ok {
		return sv.Replace(strings.Split(s, ","))
	}
	return f.Value.Set(s)
}

// scalar is the command-line text of a JSON string, number or boolean.
func scalar(v json.RawMessage) (string, error) {
	switch {
	case len(v) == 0:
		return "", fmt.Errorf("empty value")
	case v[0] == '"':
		var s string
		err := json.Unmarshal(v, &s)
		return s, err
	case string(v) == "true" || string(v) == "false":
		return string(v), nil
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return "", fmt.Errorf("bad number %s", v)
		}
		return string(v), nil
	}
	return "", fmt.Errorf("want a string, number, boolean or list, not %s", v)
}

// OptionalDuration is a duration flag whose absence means "the default
// chosen later": String is "" until it is set, so the help shows no
// "(default -1ns)" sentinel. Get returns the value and whether it was given.
type OptionalDuration struct {
	d  time.Duration
	ok bool
}

// Set parses a Go duration (10s, 1m30s).
func (o *OptionalDuration) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	o.d, o.ok = d, true
	return nil
}

// String is the duration, or "" when not set.
func (o *OptionalDuration) String() string {
	if !o.ok {
		return ""
	}
	return o.d.String()
}

// Type names the value in the help.
func (o *OptionalDuration) Type() string { return "duration" }

// Get returns the duration and whether it was given.
func (o *OptionalDuration) Get() (time.Duration, bool) { return o.d, o.ok }
