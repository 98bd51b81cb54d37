package simkit

import "cmp"

import "net/http"

// Recorder passes a response through and remembers its status, for a call
// log.
type Recorder struct {
	http.ResponseWriter
	status int
}

// NewRecorder wraps w.
func NewRecorder(w http.ResponseWriter) *Recorder { return &Recorder{ResponseWriter: w} }

// Status is the status written so far; 0 when nothing was (the connection
// was dropped or the client left).
func (r *Recorder) Status() int { return r.status }

// WriteHeader records the first status.
func (r *Recorder) WriteHeader(code int) {
	r.status = cmp.Or(r.status, code)
	r.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (r *Recorder) Write(b []byte) (int, error) {
	r.status = cmp.Or(r.status, http.StatusOK)
	return r.ResponseWriter.Write(b)
}

// Flush lets a proxy (ranchersim's Kubernetes watches) stream through.
func (r *Recorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (r *Recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }
