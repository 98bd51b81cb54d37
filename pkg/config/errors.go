package config

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
)

// FieldError is one problem in a configuration. It says where the problem
// is so that an operator can fix the file without guessing. It never holds a
// secret value.
type FieldError struct {
	Source   string // file name as given to Load or Parse; "" if unknown
	Line     int    // 1-based line; 0 when unknown (a Root built in code, an env var)
	Offering string // name of the offering the key belongs to; "" for other keys
	Path     string // key path as shown, e.g. `offerings[1] ("k8s-prod").verify_ssl`
	Msg      string
	// Warning marks something sitebus ignores and goes on without (an
	// unknown key, which the Python agent ignores too), not an error.
	Warning bool

	canon string // Path without the offering name; used to de-duplicate problems
}

func (e *FieldError) Error() string {
	var b strings.Builder
	switch {
	case e.Source != "" && e.Line > 0:
		fmt.Fprintf(&b, "%s:%d: ", e.Source, e.Line)
	case e.Source != "":
		fmt.Fprintf(&b, "%s: ", e.Source)
	case e.Line > 0:
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Warning {
		b.WriteString("warning: ")
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// scope locates a value in the document. canon is the stable key path used
// to look up line numbers; display is what messages show and adds the
// offering name, which is what operators recognise.
type scope struct {
	canon, display, offering string
}

func (s scope) key(k string) scope {
	if s.canon == "" {
		return scope{k, k, s.offering}
	}
	return scope{s.canon + "." + k, s.display + "." + k, s.offering}
}

func (s scope) index(i int) scope {
	suffix := fmt.Sprintf("[%d]", i)
	return scope{s.canon + suffix, s.display + suffix, s.offering}
}

func (s scope) named(name string) scope {
	if name == "" {
		return s
	}
	return scope{s.canon, fmt.Sprintf("%s (%q)", s.display, name), name}
}

func offeringScope(i int, name string) scope {
	return scope{}.key("offerings").index(i).named(name)
}

// problems collects FieldErrors for one source; lines maps canonical key
// paths to the line they were read from.
type problems struct {
	source string
	lines  map[string]int
	list   []*FieldError
	warns  []*FieldError
	quiet  []string // canonical paths whose follow-on problems are not reported
}

// at records a problem at s, on the line of s or of its nearest ancestor
// (a missing key is reported on the line of the mapping that lacks it).
func (p *problems) at(s scope, format string, args ...any) {
	p.atLine(s, p.lineOf(s.canon), format, args...)
}

func (p *problems) atLine(s scope, line int, format string, args ...any) {
	p.list = append(p.list, &FieldError{
		Source:   p.source,
		Line:     line,
		Offering: s.offering,
		Path:     s.display,
		Msg:      fmt.Sprintf(format, args...),
		canon:    s.canon,
	})
}

// warnAt records a warning at s.
func (p *problems) warnAt(s scope, format string, args ...any) {
	p.warns = append(p.warns, &FieldError{
		Source:   p.source,
		Line:     p.lineOf(s.canon),
		Offering: s.offering,
		Path:     s.display,
		Msg:      fmt.Sprintf(format, args...),
		Warning:  true,
		canon:    s.canon,
	})
}

func (p *problems) lineOf(canon string) int {
	for canon != "" {
		if l, ok := p.lines[canon]; ok {
			return l
		}
		i := strings.LastIndexAny(canon, ".[")
		if i < 0 {
			break
		}
		canon = canon[:i]
	}
	return 0
}

// covers reports whether a problem was already recorded at canon or at one
// of its ancestors, so validation does not repeat a decoding problem
// (a wrongly typed value is not also "required").
func (p *problems) covers(canon string) bool {
	within := func(root string) bool {
		return canon == root || strings.HasPrefix(canon, root+".") || strings.HasPrefix(canon, root+"[")
	}
	for _, e := range p.list {
		if e.canon != "" && within(e.canon) {
			return true
		}
	}
	// In quiet, "" stands for the whole document.
	return slices.ContainsFunc(p.quiet, func(root string) bool { return root == "" || within(root) })
}

// Join sorts problems by line (stable, so problems on one line keep their
// order) and joins them into one error, or returns nil. Warnings are only
// joined in when there is at least one error: next to an error they often
// explain it (a misspelt key and the "is required" of the right one).
func Join(list []*FieldError) error {
	if !slices.ContainsFunc(list, func(e *FieldError) bool { return !e.Warning }) {
		return nil
	}
	list = slices.Clone(list)
	sort.SliceStable(list, func(i, j int) bool { return list[i].Line < list[j].Line })
	errs := make([]error, len(list))
	for i, e := range list {
		errs[i] = e
	}
	return errors.Join(errs...)
}
