package waldursim

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/sitebus/sitebus/e2e/simkit"
)

// apiError is a DRF-shaped error: {"detail": "..."} or field errors.
type apiError = simkit.Error

func detail(status int, msg string) *apiError {
	return &apiError{Status: status, Body: map[string]string{"detail": msg}}
}

var errNotFound = detail(http.StatusNotFound, "Not found.")

// fieldErrors collects {"field": ["msg"]} validation errors.
type fieldErrors map[string][]string

func (fe fieldErrors) add(field, msg string) { fe[field] = append(fe[field], msg) }

func (fe fieldErrors) err() *apiError {
	if len(fe) == 0 {
		return nil
	}
	return &apiError{Status: http.StatusBadRequest, Body: map[string][]string(fe)}
}

// stateConflict is Waldur's IncorrectStateException (HTTP 409).
func stateConflict(valid ...string) *apiError {
	return detail(http.StatusConflict, "Valid states for operation: "+strings.Join(valid, ", ")+".")
}

func writeErr(w http.ResponseWriter, err error) {
	if ae, ok := err.(*apiError); ok {
		simkit.WriteJSON(w, ae.Status, ae.Body)
		return
	}
	simkit.WriteJSON(w, http.StatusInternalServerError, map[string]string{"detail": err.Error()})
}

// decodeBody parses a JSON object body. An empty body is an empty object
// (DRF treats a body-less POST as {}).
func decodeBody(r *http.Request) (map[string]any, *apiError) {
	data, err := io.ReadAll(io.LimitReader(r.Body, 10<<20))
	if err != nil {
		return nil, detail(http.StatusBadRequest, err.Error())
	}
	if len(strings.TrimSpace(string(data))) == 0 {
		return map[string]any{}, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, detail(http.StatusBadRequest, "JSON parse error - "+err.Error())
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, &apiError{Status: http.StatusBadRequest, Body: map[string][]string{
			"non_field_errors": {"Invalid data. Expected a dictionary, but got " + pyTypeName(v) + "."}}}
	}
	return m, nil
}

func pyTypeName(v any) string {
	switch v.(type) {
	case []any:
		return "list"
	case string:
		return "str"
	case json.Number:
		return "int"
	case bool:
		return "bool"
	case nil:
		return "NoneType"
	}
	return "object"
}

// Field readers in DRF's vocabulary. required=false returns ok=false when absent.

func strField(body map[string]any, fe fieldErrors, key string, required, allowBlank bool) (string, bool) {
	v, present := body[key]
	if !present {
		if required {
			fe.add(key, "This field is required.")
		}
		return "", false
	}
	switch x := v.(type) {
	case string:
		if x == "" && !allowBlank {
			fe.add(key, "This field may not be blank.")
			return "", false
		}
		return x, true
	case json.Number:
		return x.String(), true
	case nil:
		fe.add(key, "This field may not be null.")
	default:
		fe.add(key, "Not a valid string.")
	}
	return "", false
}

func uuidField(body map[string]any, fe fieldErrors, key string, required bool) (string, bool) {
	s, ok := strField(body, fe, key, required, false)
	if !ok {
		return "", false
	}
	h, valid := normUUID(s)
	if !valid {
		fe.add(key, "Must be a valid UUID.")
		return "", false
	}
	return h, true
}

func objField(body map[string]any, fe fieldErrors, key string, required bool) (map[string]any, bool) {
	v, present := body[key]
	if !present {
		if required {
			fe.add(key, "This field is required.")
		}
		return nil, false
	}
	m, ok := v.(map[string]any)
	if !ok {
		fe.add(key, "Expected a dictionary of items but got type \""+pyTypeName(v)+"\".")
		return nil, false
	}
	return m, true
}

func listField(body map[string]any, fe fieldErrors, key string, required bool) ([]any, bool) {
	v, present := body[key]
	if !present {
		if required {
			fe.add(key, "This field is required.")
		}
		return nil, false
	}
	l, ok := v.([]any)
	if !ok {
		fe.add(key, "Expected a list of items but got type \""+pyTypeName(v)+"\".")
		return nil, false
	}
	return l, true
}

// intMap validates {"cpu": 4, ...} (limits).
func intMap(m map[string]any, fe fieldErrors, key string) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		n, ok := v.(json.Number)
		if !ok {
			fe.add(key, fmt.Sprintf("%s: A valid integer is required.", k))
			continue
		}
		i, err := n.Int64()
		if err != nil {
			fe.add(key, fmt.Sprintf("%s: A valid integer is required.", k))
			continue
		}
		out[k] = int(i)
	}
	return out
}

// jsonPlain converts decoded JSON (with json.Number) to plain Go values.
func jsonPlain(v any) any {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonPlain(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonPlain(e)
		}
		return out
	}
	return v
}

// restrictFields applies Waldur's repeated ?field= parameters (unknown
// names are ignored, as RestrictedSerializerMixin does).
func restrictFields(r *http.Request, obj map[string]any) map[string]any {
	fields := r.URL.Query()["field"]
	if len(fields) == 0 {
		return obj
	}
	out := map[string]any{}
	for k, v := range obj {
		if slices.Contains(fields, k) {
			out[k] = v
		}
	}
	return out
}

// toMap renders a typed API object as a JSON object map.
func toMap(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var m map[string]any
	_ = json.Unmarshal(data, &m)
	return m
}
