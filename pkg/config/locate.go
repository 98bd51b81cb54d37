package config

import "errors"

// OfferingProblems turns what a backend or plugin found in offering i's
// settings into FieldErrors naming the file, line, offering and key, as the
// problems Parse finds do. A *SettingError is placed at its key; any other
// error at the offering. err may be joined (errors.Join); nil gives nil.
func (r *Root) OfferingProblems(i int, err error) []*FieldError {
	if err == nil {
		return nil
	}
	var name string
	if i >= 0 && i < len(r.Offerings) {
		name = r.Offerings[i].Name
	}
	base := offeringScope(i, name)
	p := &problems{source: r.source, lines: r.lines}
	for _, e := range leaves(err) {
		var se *SettingError
		switch {
		case errors.As(e, &se):
			s := scope{base.canon + "." + se.Key, base.display + "." + se.Key, base.offering}
			if se.Warning {
				p.warnAt(s, "%s", se.Msg)
			} else {
				p.at(s, "%s", se.Msg)
			}
		default:
			p.at(base, "%s", e.Error())
		}
	}
	return append(p.list, p.warns...)
}

// Problem returns a problem at a key outside the offerings, given as its
// path (e.g. "sitebus.services[1]"), with the line it was read from.
func (r *Root) Problem(path, format string, args ...any) *FieldError {
	p := &problems{source: r.source, lines: r.lines}
	p.at(scope{path, path, ""}, format, args...)
	return p.list[0]
}

// leaves flattens errors.Join trees into their single errors.
func leaves(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leaves(e)...)
		}
		return out
	}
	return []error{err}
}
