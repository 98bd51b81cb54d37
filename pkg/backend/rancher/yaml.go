package rancher

import (
	"fmt"
	"regexp"
	"strings"
)

// QuotaYAML is the manifest the Python plugin imports into a namespace,
// byte for byte as PyYAML's yaml.dump writes it: block style, keys sorted,
// two-space indentation, and a scalar single-quoted when PyYAML would read
// it back as something other than a string ('2', not 2).
//
// It is written by hand rather than with a YAML library: the document is
// fixed and small, and no Go encoder reproduces PyYAML's choices (yaml.v3
// indents lists and quotes differently, sigs.k8s.io/yaml goes through
// JSON and double-quotes). Scalars are restricted to the characters a
// namespace name, a quota key and a quota value can have; anything else
// is refused rather than emitted differently from PyYAML.
func QuotaYAML(namespace string, hard map[string]string) (string, error) {
	var b strings.Builder
	line := func(indent int, key, value string) error {
		k, err := yamlScalar(key)
		if err != nil {
			return err
		}
		b.WriteString(strings.Repeat("  ", indent))
		b.WriteString(k)
		b.WriteByte(':')
		if value != "" {
			v, err := yamlScalar(value)
			if err != nil {
				return err
			}
			b.WriteByte(' ')
			b.WriteString(v)
		}
		b.WriteByte('\n')
		return nil
	}
	// The top-level keys and metadata's are in sorted order already.
	steps := []struct {
		indent     int
		key, value string
	}{
		{0, "apiVersion", "v1"},
		{0, "kind", "ResourceQuota"},
		{0, "metadata", ""},
		{1, "name", QuotaName},
		{1, "namespace", namespace},
		{0, "spec", ""},
	}
	for _, s := range steps {
		if err := line(s.indent, s.key, s.value); err != nil {
			return "", err
		}
	}
	if len(hard) == 0 {
		// PyYAML writes an empty mapping in flow style.
		b.WriteString("  hard: {}\n")
		return b.String(), nil
	}
	if err := line(1, "hard", ""); err != nil {
		return "", err
	}
	for _, k := range sortedKeys(hard) { // PyYAML sorts by code point, as Go does
		if hard[k] == "" {
			return "", fmt.Errorf("quota YAML: empty value for %s", k)
		}
		if err := line(2, k, hard[k]); err != nil {
			return "", err
		}
	}
	return b.String(), nil
}

// yamlSafe are the characters of the scalars QuotaYAML writes; PyYAML
// writes strings of them plain unless they would resolve to another type.
var yamlSafe = regexp.MustCompile(`^[A-Za-z0-9._/-]+$`)

// PyYAML's implicit resolvers (yaml/resolver.py, YAML 1.1): a plain
// scalar matching one of them is read back as a bool, int, float, null,
// timestamp, merge or value, so a string like that is single-quoted.
var pyYAMLImplicit = []*regexp.Regexp{
	regexp.MustCompile(`^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$`),
	regexp.MustCompile(`^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9_]+(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$`),
	regexp.MustCompile(`^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$`),
	regexp.MustCompile(`^(?:<<)$`),
	regexp.MustCompile(`^(?:~|null|Null|NULL|)$`),
	regexp.MustCompile(`^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$`),
	regexp.MustCompile(`^(?:=)$`),
}

// yamlScalar writes s as PyYAML's emitter would: plain when that reads
// back as the same string, else single-quoted. ("-" alone and a leading
// "---" or "..." are indicators PyYAML also quotes.)
func yamlScalar(s string) (string, error) {
	if s != "" && !yamlSafe.MatchString(s) {
		return "", fmt.Errorf("quota YAML: %q has characters the quota manifest never holds", s)
	}
	quote := s == "-" || strings.HasPrefix(s, "---") || strings.HasPrefix(s, "...")
	for _, re := range pyYAMLImplicit {
		quote = quote || re.MatchString(s)
	}
	if quote {
		return "'" + s + "'", nil // no ' in yamlSafe, so nothing to double
	}
	return s, nil
}
