package simkit

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// Reply is a typed handler's answer when a 200 with a JSON body is not
// what it means: another status, extra headers (a page's links), or no
// body at all.
type Reply struct {
	// Status defaults to 200.
	Status int
	// Header is added to the answer's headers.
	Header http.Header
	// Body is sent as JSON; nil sends none.
	Body any
}

// Created is the Reply of a create: 201 with body v.
func Created(v any) Reply { return Reply{Status: http.StatusCreated, Body: v} }

// Handlers wraps typed handlers, func(r, In) (Out, error), the way one
// simulated service reads requests and writes answers and errors; each
// simulator keeps its wire format in these options.
type Handlers struct {
	// Decode fills in (a pointer to the handler's In) from r; nil is
	// DecodeJSON. Its error is answered as the handler's would be.
	Decode func(r *http.Request, in any) error
	// WriteError answers an error in the service's format; nil writes an
	// *Error as WriteError does and any other error as a 500 with its text.
	WriteError func(w http.ResponseWriter, err error)
	// Render turns an answer's body into what is sent (e.g. only the
	// fields the request names); nil sends the body as it is.
	Render func(r *http.Request, body any) any
}

// BadBody is Handlers for a route whose only error is a malformed JSON
// body (e.g. an admin route's): bad answers it, with the decoder's
// message, in the simulated service's error format.
func BadBody(bad func(w http.ResponseWriter, msg string)) Handlers {
	return Handlers{WriteError: func(w http.ResponseWriter, err error) {
		if e, ok := err.(*Error); ok {
			bad(w, fmt.Sprint(e.Body))
			return
		}
		bad(w, err.Error())
	}}
}

// DecodeJSON reads a JSON body into in. An In of struct{} reads nothing;
// a malformed body is a 400 *Error with the decoder's message.
func DecodeJSON(r *http.Request, in any) error {
	if _, none := in.(*struct{}); none {
		return nil
	}
	if err := json.NewDecoder(r.Body).Decode(in); err != nil {
		return &Error{Status: http.StatusBadRequest, Body: err.Error()}
	}
	return nil
}

// Handle adapts h once: its In decoded, its Out (a Reply, or else the body
// of a 200) written as JSON, its error written by WriteError.
func Handle[In, Out any](hs Handlers, h func(r *http.Request, in In) (Out, error)) http.HandlerFunc {
	decode := hs.Decode
	if decode == nil {
		decode = DecodeJSON
	}
	return func(w http.ResponseWriter, r *http.Request) {
		var in In
		var out Out
		err := decode(r, &in)
		if err == nil {
			out, err = h(r, in)
		}
		if err != nil {
			hs.writeError(w, err)
			return
		}
		rep, ok := any(out).(Reply)
		if !ok {
			rep = Reply{Body: out}
		}
		for k, v := range rep.Header {
			w.Header()[k] = v
		}
		switch {
		case rep.Body == nil:
			w.WriteHeader(max(rep.Status, http.StatusOK))
		case hs.Render != nil:
			WriteJSON(w, max(rep.Status, http.StatusOK), hs.Render(r, rep.Body))
		default:
			WriteJSON(w, max(rep.Status, http.StatusOK), rep.Body)
		}
	}
}

func (hs Handlers) writeError(w http.ResponseWriter, err error) {
	if hs.WriteError != nil {
		hs.WriteError(w, err)
	} else if e, ok := err.(*Error); ok {
		WriteError(w, e)
	} else {
		WriteError(w, &Error{Status: http.StatusInternalServerError, Body: err.Error()})
	}
}

// Decode reads a JSON body into v; bad builds the service's 400 from
// "Malformed request body: <reason>".
func Decode(r *http.Request, v any, bad func(msg string) *Error) *Error {
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		return bad("Malformed request body: " + err.Error())
	}
	return nil
}

// DecodeIn reads the In under key of a {"<key>": In} body; an absent key
// is In's zero value.
func DecodeIn[In any](r *http.Request, key string, bad func(msg string) *Error) (In, *Error) {
	var env map[string]json.RawMessage
	var in In
	if e := Decode(r, &env, bad); e != nil {
		return in, e
	}
	if raw, ok := env[key]; ok {
		if err := json.Unmarshal(raw, &in); err != nil {
			return in, bad("Malformed request body: " + err.Error())
		}
	}
	return in, nil
}
