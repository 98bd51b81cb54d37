package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"gopkg.in/yaml.v3"
)

// Load reads and parses the config file at path, taking period overrides
// and ${VAR} secrets from the process environment.
func Load(path string) (*Root, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(data, path, os.LookupEnv)
}

// Parse decodes a config document, applies environment overrides and
// defaults, and validates it. source names the document in messages.
// lookupEnv reads environment variables (os.LookupEnv in production); nil
// means an empty environment. On error the returned Root is nil and the
// error joins every problem found.
func Parse(data []byte, source string, lookupEnv func(string) (string, bool)) (*Root, error) {
	if lookupEnv == nil {
		lookupEnv = func(string) (string, bool) { return "", false }
	}
	doc, err := parseYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", source, err)
	}

	d := &decoder{problems: problems{source: source, lines: map[string]int{}}, lookupEnv: lookupEnv}
	r := d.root(doc)
	r.source, r.lines = source, d.lines

	envPeriods, envErrs := periodsFromEnv(lookupEnv)
	r.Periods = envPeriods.overriddenBy(r.Sitebus.Periods)
	r.normalize()

	list := append(envErrs, d.list...)
	for _, e := range r.validate() {
		if !d.covers(e.canon) {
			list = append(list, e)
		}
	}
	// After the file's log_level is checked, so that a bad value in the
	// file is reported even while the variable overrides it.
	r.logLevelFrom = LogLevelFromDefault
	if _, set := d.lines["log_level"]; set {
		r.logLevelFrom = LogLevelFromFile
	}
	if e := r.logLevelFromEnv(lookupEnv); e != nil {
		list = append(list, e)
	}
	if err := Join(append(list, d.warns...)); err != nil {
		return nil, err
	}
	r.warns = d.warns
	return r, nil
}

// parseYAML parses exactly one YAML document; PyYAML's safe_load rejects
// a stream of several, and silently using the first would hide the rest.
func parseYAML(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case err == nil:
		return nil, fmt.Errorf("line %d: a second YAML document; the config must be a single document", more.Line)
	case !errors.Is(err, io.EOF):
		return nil, err
	}
	return &doc, nil
}
