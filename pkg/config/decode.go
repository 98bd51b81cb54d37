package config

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// decoder turns yaml.Nodes into config values, recording the line of each
// key and collecting every problem instead of stopping at the first.
type decoder struct {
	problems
	lookupEnv func(string) (string, bool)
}

// setter decodes one value found at scope s.
type setter func(n *yaml.Node, s scope)

// entry is one key of a mapping after aliases and merge keys are resolved.
type entry struct {
	key         string
	keyNode, vn *yaml.Node
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		return resolve(n.Content[0])
	}
	return n
}

func isNull(n *yaml.Node) bool {
	n = resolve(n)
	return n == nil || n.Kind == 0 || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

func kindName(n *yaml.Node) string {
	switch resolve(n).Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	default:
		return "a scalar"
	}
}

func isMergeKey(k *yaml.Node) bool {
	return k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge"
}

// entries lists a mapping's keys in file order. Merge keys (<<: *anchor)
// are spliced in as PyYAML does, explicit keys winning. A duplicate key is
// an error: PyYAML silently keeps the last one, which hides mistakes.
// A null value is an empty mapping.
func (d *decoder) entries(n *yaml.Node, s scope) []entry {
	return d.mergedEntries(n, s, map[*yaml.Node]bool{})
}

// mergedEntries is entries; expanding holds the mappings whose merge keys
// are being spliced in, so that one merging itself (<<: *a inside &a,
// directly or through another) is an error instead of endless recursion.
func (d *decoder) mergedEntries(n *yaml.Node, s scope, expanding map[*yaml.Node]bool) []entry {
	n = resolve(n)
	if isNull(n) {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.atLine(s, n.Line, "must be a mapping, not %s", kindName(n))
		return nil
	}
	explicit := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if isMergeKey(k) {
			continue
		}
		if k.Kind != yaml.ScalarNode {
			d.atLine(s, k.Line, "keys must be scalars, not %s", kindName(k))
			continue
		}
		if first, dup := explicit[k.Value]; dup {
			d.atLine(s.key(k.Value), k.Line, "duplicate key (first set on line %d)", first.Line)
			continue
		}
		explicit[k.Value] = k
	}
	var out []entry
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := resolve(n.Content[i]), n.Content[i+1]
		if isMergeKey(k) {
			expanding[n] = true
			for _, src := range d.mergeSources(v, s) {
				if expanding[src] {
					d.atLine(s, k.Line, "a merge key (<<) refers to a mapping that merges it: the merge never ends")
					continue
				}
				for _, e := range d.mergedEntries(src, s, expanding) {
					if explicit[e.key] == nil && !seen[e.key] {
						seen[e.key] = true
						out = append(out, e)
					}
				}
			}
			delete(expanding, n)
			continue
		}
		if k.Kind != yaml.ScalarNode || seen[k.Value] {
			continue
		}
		seen[k.Value] = true
		out = append(out, entry{k.Value, k, v})
	}
	return out
}

func (d *decoder) mergeSources(v *yaml.Node, s scope) []*yaml.Node {
	v = resolve(v)
	switch v.Kind {
	case yaml.MappingNode:
		return []*yaml.Node{v}
	case yaml.SequenceNode:
		var out []*yaml.Node
		for _, item := range v.Content {
			if item = resolve(item); item.Kind == yaml.MappingNode {
				out = append(out, item)
			} else {
				d.atLine(s, item.Line, "a merge key (<<) must refer to mappings")
			}
		}
		return out
	}
	d.atLine(s, v.Line, "a merge key (<<) must refer to a mapping")
	return nil
}

// fields decodes a mapping by handing each key to its setter. Only the
// keys present are decoded, so a value the file sets, even "" or 0 or
// false, stays as written and a missing key keeps the default the value
// started with. A key without a setter is a warning that suggests the
// closest known key (the Python agent ignores unknown keys, so they must
// not stop a file from loading, but a typo must not pass unseen); a key
// whose setter is nil is accepted and ignored.
func (d *decoder) fields(n *yaml.Node, s scope, setters map[string]setter) {
	for _, e := range d.entries(n, s) {
		ks := s.key(e.key)
		d.lines[ks.canon] = e.keyNode.Line
		set, known := setters[e.key]
		if !known {
			names := make([]string, 0, len(setters))
			for k := range setters {
				names = append(names, k)
			}
			d.warnAt(ks, "%s", UnknownKeyMessage(e.key, names))
			continue
		}
		if set != nil {
			set(e.vn, ks)
		}
	}
}

// UnknownKeyMessage says that key is not one of known and is ignored,
// suggesting the closest known key, or listing them when none is close.
func UnknownKeyMessage(key string, known []string) string {
	names := slices.Sorted(slices.Values(known))
	if best := closest(key, names); best != "" {
		return fmt.Sprintf("unknown key %q is ignored (did you mean %q?)", key, best)
	}
	return fmt.Sprintf("unknown key %q is ignored; known keys here: %s", key, strings.Join(names, ", "))
}

// closest returns the known name nearest to key by edit distance, or "" if
// none is close enough to be a plausible typo.
func closest(key string, names []string) string {
	best, bestDist := "", max(2, len(key)/3)+1
	for _, n := range names {
		if dist := editDistance(key, n); dist < bestDist {
			best, bestDist = n, dist
		}
	}
	return best
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// scalar returns a scalar's text; ok is false for null (keep the default)
// and for non-scalars (reported). It never puts the value in a message, so
// it is safe for secrets.
func (d *decoder) scalar(n *yaml.Node, s scope, want string) (string, bool) {
	n = resolve(n)
	if isNull(n) {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		d.atLine(s, n.Line, "must be %s, not %s", want, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (d *decoder) str(p *string) setter {
	return func(n *yaml.Node, s scope) {
		if v, ok := d.scalar(n, s, "a string"); ok {
			*p = v
		}
	}
}

// parseBool accepts what pydantic accepts for a bool, so quoted values
// such as "false" keep working.
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "on", "t", "true", "y", "yes":
		return true, true
	case "0", "off", "f", "false", "n", "no":
		return false, true
	}
	return false, false
}

func (d *decoder) boolean(n *yaml.Node, s scope) (bool, bool) {
	v, ok := d.scalar(n, s, "true or false")
	if !ok {
		return false, false
	}
	b, ok := parseBool(v)
	if !ok {
		d.atLine(s, resolve(n).Line, "%q is not true or false", v)
	}
	return b, ok
}

func (d *decoder) flag(p *bool) setter {
	return func(n *yaml.Node, s scope) {
		if b, ok := d.boolean(n, s); ok {
			*p = b
		}
	}
}

func (d *decoder) optFlag(p **bool) setter {
	return func(n *yaml.Node, s scope) {
		if b, ok := d.boolean(n, s); ok {
			*p = &b
		}
	}
}

func (d *decoder) integer(p *int) setter {
	return func(n *yaml.Node, s scope) {
		v, ok := d.scalar(n, s, "an integer")
		if !ok {
			return
		}
		t := strings.TrimSpace(v)
		if i, err := strconv.ParseInt(t, 0, 0); err == nil {
			*p = int(i)
			return
		}
		if f, err := strconv.ParseFloat(t, 64); err == nil && f == math.Trunc(f) && math.Abs(f) < math.MaxInt32 {
			*p = int(f)
			return
		}
		d.atLine(s, resolve(n).Line, "%q is not an integer", v)
	}
}

func (d *decoder) number(n *yaml.Node, s scope) (float64, bool) {
	v, ok := d.scalar(n, s, "a number")
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		d.atLine(s, resolve(n).Line, "%q is not a number", v)
		return 0, false
	}
	return f, true
}

func (d *decoder) float(p *float64) setter {
	return func(n *yaml.Node, s scope) {
		if f, ok := d.number(n, s); ok {
			*p = f
		}
	}
}

func (d *decoder) optFloat(p **float64) setter {
	return func(n *yaml.Node, s scope) {
		if f, ok := d.number(n, s); ok {
			*p = &f
		}
	}
}

func (d *decoder) duration(p *time.Duration) setter {
	return func(n *yaml.Node, s scope) {
		v, ok := d.scalar(n, s, "a duration")
		if !ok {
			return
		}
		dur, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil {
			d.atLine(s, resolve(n).Line, "%q is not a duration (use a unit, e.g. \"30s\", \"15m\", \"168h\")", v)
			return
		}
		*p = dur
	}
}

// optDuration decodes a duration whose zero value means "unset, use the
// service's default" downstream; an explicit zero or negative value would
// be taken for unset, so it is refused here, where its line is known.
func (d *decoder) optDuration(p *time.Duration, atLeast time.Duration) setter {
	return func(n *yaml.Node, s scope) {
		var v time.Duration
		d.duration(&v)(n, s)
		switch {
		case isNull(n) || d.covers(s.canon):
		case v <= 0:
			d.at(s, "%s must be positive (leave the key out for the default)", v)
		case v < atLeast:
			d.at(s, "%s is shorter than the minimum of %s", v, atLeast)
		default:
			*p = v
		}
	}
}

func (d *decoder) stringList(p *[]string) setter {
	return func(n *yaml.Node, s scope) {
		n = resolve(n)
		if isNull(n) {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.atLine(s, n.Line, "must be a list of strings, not %s", kindName(n))
			return
		}
		for i, item := range n.Content {
			is := s.index(i)
			d.lines[is.canon] = item.Line
			if v, ok := d.scalar(item, is, "a string"); ok {
				*p = append(*p, v)
			}
		}
	}
}

// anyMap decodes a plugin-owned mapping as is.
func (d *decoder) anyMap(p *map[string]any) setter {
	return func(n *yaml.Node, s scope) {
		n = resolve(n)
		if isNull(n) {
			return
		}
		if n.Kind != yaml.MappingNode {
			d.atLine(s, n.Line, "must be a mapping, not %s", kindName(n))
			return
		}
		d.recordLines(n, s)
		var m map[string]any
		if v, ok := d.anyValue(n, s); ok {
			m, _ = v.(map[string]any)
		}
		if m != nil {
			*p = m
		}
	}
}

// recordLines notes the line of every key and item inside a plugin-owned
// value, so that problems the plugin finds later (through
// Root.OfferingProblems) point at their line.
func (d *decoder) recordLines(n *yaml.Node, s scope) {
	d.recordLinesOf(n, s, map[*yaml.Node]bool{})
}

// recordLinesOf is recordLines; inside holds the nodes being walked, so
// that an alias to one of them (&a {x: *a}) ends the walk instead of
// recursing for ever: yaml.v3 refuses such a value when it is decoded.
func (d *decoder) recordLinesOf(n *yaml.Node, s scope, inside map[*yaml.Node]bool) {
	n = resolve(n)
	if n == nil || inside[n] {
		return
	}
	inside[n] = true
	defer delete(inside, n)
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolve(n.Content[i])
			if k.Kind != yaml.ScalarNode || isMergeKey(k) {
				continue
			}
			ks := s.key(k.Value)
			if _, seen := d.lines[ks.canon]; !seen {
				d.lines[ks.canon] = k.Line
			}
			d.recordLinesOf(n.Content[i+1], ks, inside)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			is := s.index(i)
			d.lines[is.canon] = resolve(item).Line
			d.recordLinesOf(item, is, inside)
		}
	}
}

// anyValue decodes a plugin-owned value generically, reading plain
// yes/no/on/off as booleans like PyYAML (YAML 1.1) does; yaml.v3 follows
// YAML 1.2 and would leave them strings, so "keycloak_enabled: yes" would
// change meaning between the two agents.
func (d *decoder) anyValue(n *yaml.Node, s scope) (any, bool) {
	yaml11Bools(n, map[*yaml.Node]bool{})
	var v any
	if err := n.Decode(&v); err != nil {
		d.atLine(s, resolve(n).Line, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		return nil, false
	}
	return normalizeMaps(v), true
}

// normalizeMaps turns the map[any]any that yaml.v3 produces for mappings
// with non-string keys (e.g. "1: x", "on: x") into map[string]any, so that
// plugins see one map type, as PyYAML's dicts give Python code.
func normalizeMaps(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = normalizeMaps(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = normalizeMaps(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = normalizeMaps(e)
		}
		return t
	}
	return v
}

func yaml11Bools(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Style != 0 || n.ShortTag() != "!!str" {
			return // quoted, block or explicitly tagged: a string in YAML 1.1 too
		}
		switch n.Value {
		case "yes", "Yes", "YES", "on", "On", "ON":
			n.Tag, n.Value = "!!bool", "true"
		case "no", "No", "NO", "off", "Off", "OFF":
			n.Tag, n.Value = "!!bool", "false"
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			yaml11Bools(n.Content[i], seen)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			yaml11Bools(c, seen)
		}
	case yaml.AliasNode:
		yaml11Bools(n.Alias, seen)
	}
}

var envRef = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$`)

// secret reads a credential from exactly one of: the literal value of key,
// a value that is exactly ${NAME} (the environment variable NAME), or the
// file named by key+"_file" (trailing newlines trimmed). Messages name the
// key, variable or file, never the value.
func (d *decoder) secret(value, file *yaml.Node, s scope, key string) Secret {
	vs, fs := s.key(key), s.key(key+"_file")
	sec, ok := d.readSecret(value, file, vs, fs)
	if !ok {
		// The key was set but unusable: do not also report it as missing.
		d.quiet = append(d.quiet, vs.canon)
	}
	return sec
}

func (d *decoder) readSecret(value, file *yaml.Node, vs, fs scope) (Secret, bool) {
	var lit, path string
	var hasLit, hasFile bool
	if value != nil {
		lit, hasLit = d.scalar(value, vs, "a string")
		hasLit = hasLit && lit != ""
	}
	if file != nil {
		path, hasFile = d.scalar(file, fs, "a file path")
		hasFile = hasFile && path != ""
	}
	switch {
	case hasLit && hasFile:
		d.at(fs, "set either %s or %s, not both", lastKey(vs), lastKey(fs))
		return "", false
	case hasFile:
		b, err := os.ReadFile(path)
		if err != nil {
			d.at(fs, "cannot read the secret file: %v", err)
			return "", false
		}
		return Secret(strings.TrimRight(string(b), "\r\n")), true
	case hasLit:
		m := envRef.FindStringSubmatch(lit)
		if m == nil {
			return Secret(lit), true
		}
		v, ok := d.lookupEnv(m[1])
		if !ok {
			d.at(vs, "environment variable %s is not set", m[1])
			return "", false
		}
		return Secret(v), true
	}
	return "", true
}

func lastKey(s scope) string { return s.canon[strings.LastIndex(s.canon, ".")+1:] }
