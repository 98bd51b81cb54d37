package cloudinit

import (
	"fmt"
	"strings"

	"github.com/sitebus/sitebus/pkg/fault"
)

// TemplateError is a cloud_init_template that cannot be rendered. It is
// fault.Invalid: only the template (or the settings) can fix it.
type TemplateError struct {
	// Source names the template: "the default template", an inline
	// template or the file it was read from.
	Source string
	// Line is the 1-based line of the problem (0 when not about a place).
	Line int
	// Placeholder is the field as written between the braces, if any.
	Placeholder string
	Msg         string
}

func (e *TemplateError) Error() string {
	where := "cloud_init_template (" + e.Source + ")"
	if e.Line > 0 {
		where += fmt.Sprintf(" line %d", e.Line)
	}
	return where + ": " + e.Msg
}

func (e *TemplateError) Is(target error) bool { return target == fault.Invalid }

// field is one {name} of a template.
type field struct {
	name string
	line int
}

// scan walks a template with Python's str.format rules: {name} is a
// placeholder, {{ and }} are literal braces, a lone } is an error.
// Positional fields ({}, {0}), conversions ({x!r}), format specs ({x:>8}),
// attributes and indexes ({x.y}, {x[0]}) are refused: a cloud-init
// template has no use for them and a typo in one would otherwise pass.
// emit gets the literal text and each placeholder in order.
func scan(src, text string, literal func(string), placeholder func(field) error) error {
	line := 1
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			literal(lit.String())
			lit.Reset()
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case '\n':
			line++
			lit.WriteByte(c)
		case '{':
			if i+1 < len(text) && text[i+1] == '{' {
				lit.WriteByte('{')
				i++
				continue
			}
			end := strings.IndexAny(text[i+1:], "{}\n")
			if end < 0 || text[i+1+end] != '}' {
				return &TemplateError{Source: src, Line: line,
					Msg: "a single '{' starts no placeholder (write {{ for a literal brace)"}
			}
			raw := text[i+1 : i+1+end]
			if err := checkField(src, line, raw); err != nil {
				return err
			}
			flush()
			if err := placeholder(field{name: raw, line: line}); err != nil {
				return err
			}
			i += end + 1
		case '}':
			if i+1 < len(text) && text[i+1] == '}' {
				lit.WriteByte('}')
				i++
				continue
			}
			return &TemplateError{Source: src, Line: line, Msg: "a single '}' closes no placeholder (write }} for a literal brace)"}
		default:
			lit.WriteByte(c)
		}
	}
	flush()
	return nil
}

func checkField(src string, line int, raw string) error {
	bad := func(msg string) error {
		return &TemplateError{Source: src, Line: line, Placeholder: raw, Msg: fmt.Sprintf("placeholder {%s}: %s", raw, msg)}
	}
	name := raw
	if i := strings.IndexAny(raw, "!:.["); i >= 0 {
		name = raw[:i]
		if name != "" {
			return bad("conversions, format specs, attributes and indexes are not supported; write {" + name + "}")
		}
	}
	if name == "" || strings.Trim(name, "0123456789") == "" {
		return bad("positional placeholders are not supported; use a name (" + strings.Join(Placeholders(), ", ") + ")")
	}
	if strings.TrimSpace(name) != name {
		return bad("no spaces inside the braces")
	}
	return nil
}
