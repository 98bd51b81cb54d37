package ranchercluster

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/sitebus/sitebus/pkg/config"
)

// intValue reads a whole number as YAML (int, uint64, float64) or JSON
// (json.Number, float64) decoders produce it. A float with a fraction is
// not one: 1.5 workers is a mistake, not 1.
func intValue(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int64:
		return int(n), n >= math.MinInt32 && n <= math.MaxInt32
	case uint64:
		return int(n), n <= math.MaxInt32
	case float64:
		if n == math.Trunc(n) && math.Abs(n) <= math.MaxInt32 {
			return int(n), true
		}
	case json.Number:
		if i, err := strconv.ParseInt(string(n), 10, 32); err == nil {
			return int(i), true
		}
		if f, err := n.Float64(); err == nil && f == math.Trunc(f) && math.Abs(f) <= math.MaxInt32 {
			return int(f), true
		}
	}
	return 0, false
}

// settingInt reads an integer setting; an absent or null key leaves *p
// alone (decode onto defaults, as the other backends' settings).
func settingInt(d *config.SettingsDecoder, key string, p *int) {
	v := d.Value(key)
	if v == nil {
		return
	}
	i, ok := intValue(v)
	if !ok {
		d.Bad(key, "an integer", v)
		return
	}
	*p = i
}

// settingStrList reads a list of strings; an explicit [] is kept as an
// empty, non-nil list.
func settingStrList(d *config.SettingsDecoder, key string, p *[]string) {
	v := d.Value(key)
	if v == nil {
		return
	}
	list, ok := v.([]any)
	if !ok {
		d.Bad(key, "a list of strings", v)
		return
	}
	out := make([]string, 0, len(list))
	for i, item := range list {
		s, ok := item.(string)
		if !ok {
			d.Bad(key+"["+strconv.Itoa(i)+"]", "a string", item)
			continue
		}
		out = append(out, s)
	}
	*p = out
}

// pyBool reads a boolean the way Django REST framework's BooleanField
// does, which is how Waldur validated order attributes: true/false, 1/0
// and their usual spellings as strings.
func pyBool(v any) (bool, bool) {
	switch b := v.(type) {
	case bool:
		return b, true
	case string:
		switch strings.ToLower(strings.TrimSpace(b)) {
		case "true", "1", "yes", "on", "t", "y":
			return true, true
		case "false", "0", "no", "off", "f", "n":
			return false, true
		}
	default:
		if i, ok := intValue(v); ok && (i == 0 || i == 1) {
			return i == 1, true
		}
	}
	return false, false
}
