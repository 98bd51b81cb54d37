package simkit

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestAdminReadsBodiesWithTheSimulatorsHandlers(t *testing.T) {
	var added []Fault
	strict := Handlers{
		Decode: func(r *http.Request, in any) error {
			dec := json.NewDecoder(r.Body)
			dec.DisallowUnknownFields()
			return dec.Decode(in)
		},
		WriteError: func(w http.ResponseWriter, err error) {
			WriteJSON(w, http.StatusTeapot, map[string]string{"detail": err.Error()})
		},
	}
	bad := BadBody(func(w http.ResponseWriter, msg string) {
		WriteError(w, &Error{Status: http.StatusBadRequest, Body: msg})
	})
	for _, tc := range []struct {
		name     string
		handlers Handlers
		body     string
		status   int
		added    int
	}{
		{"BadBody ignores an unknown field", bad, `{"status":502,"stauts":1}`, http.StatusNoContent, 1},
		{"BadBody answers a malformed body", bad, `{`, http.StatusBadRequest, 0},
		{"the simulator's Handlers may refuse an unknown field", strict, `{"status":502,"stauts":1}`, http.StatusTeapot, 0},
		{"the simulator's Handlers read a good body", strict, `{"status":502}`, http.StatusNoContent, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added = nil
			mux := http.NewServeMux()
			Admin{AddFault: func(f Fault) { added = append(added, f) }, Handlers: tc.handlers}.Routes(mux)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/sim/faults", strings.NewReader(tc.body)))
			if rec.Code != tc.status || len(added) != tc.added {
				t.Fatalf("status %d, %d faults added (%s); want %d, %d", rec.Code, len(added), rec.Body, tc.status, tc.added)
			}
			if tc.added == 1 && added[0].Status != 502 {
				t.Fatalf("added %+v, want status 502", added[0])
			}
		})
	}
}
