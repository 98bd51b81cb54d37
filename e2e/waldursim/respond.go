package waldursim

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

func (fe fieldErrors) err() error {
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

// decodeBody parses a JSON object body, which the call log has read into
// memory. An empty body is an empty object (DRF treats a body-less POST
// as {}).
func decodeBody(r *http.Request) (map[string]any, error) {
	data, _ := io.ReadAll(r.Body)
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

// typedField reads a dictionary (T map[string]any) or a list (T []any).
func typedField[T any](body map[string]any, fe fieldErrors, key string, required bool) (T, bool) {
	v, present := body[key]
	t, ok := v.(T)
	switch {
	case !present && required:
		fe.add(key, "This field is required.")
	case present && !ok:
		what := "a dictionary"
		if _, isList := any(t).([]any); isList {
			what = "a list"
		}
		fe.add(key, "Expected "+what+" of items but got type \""+pyTypeName(v)+"\".")
	}
	return t, present && ok
}

// eachDict reads the list of dictionaries body[key] (absent: a field
// error), giving each to read with the field errors it adds, which are
// reported under key as "key.field".
func eachDict(body map[string]any, fe fieldErrors, key string, read func(m map[string]any, ef fieldErrors)) bool {
	l, ok := typedField[[]any](body, fe, key, true)
	for _, e := range l {
		m, isDict := e.(map[string]any)
		if !isDict {
			fe.add(key, "Invalid data. Expected a dictionary.")
			continue
		}
		ef := fieldErrors{}
		read(m, ef)
		for k, v := range ef {
			fe[key+"."+k] = v
		}
	}
	return ok && len(fe) == 0
}

// intMap validates {"cpu": 4, ...} (limits).
func intMap(m map[string]any, fe fieldErrors, key string) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		n, ok := v.(json.Number)
		i, err := n.Int64()
		if !ok || err != nil {
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

// restrictFields applies Waldur's repeated ?field= parameters to what a
// GET answers, an object or each object of a list (unknown names are
// ignored, as RestrictedSerializerMixin does).
func restrictFields(r *http.Request, body any) any {
	fields := r.URL.Query()["field"]
	if r.Method != http.MethodGet || len(fields) == 0 {
		return body
	}
	restrict := func(v any) any {
		if m, ok := v.(map[string]any); ok {
			maps.DeleteFunc(m, func(k string, _ any) bool { return !slices.Contains(fields, k) })
		}
		return v
	}
	v := toJSON[any](body)
	if l, ok := v.([]any); ok {
		for i := range l {
			l[i] = restrict(l[i])
		}
		return l
	}
	return restrict(v)
}

// toJSON renders v as the JSON value T (e.g. a typed API object as a map),
// numbers kept exact.
func toJSON[T any](v any) T {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out T
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	_ = dec.Decode(&out)
	return out
}
