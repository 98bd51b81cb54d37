package telemetry

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/trace"
)

var clientRequests = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "sitebus_http_client_requests_total",
	Help: "HTTP requests sitebus made to external APIs, by target (waldur, kubernetes, ...), method and status code.",
}, []string{"target", "method", "code"})

// InstrumentTransport wraps rt so that every request to an external API is a
// client span (a child of the span in the request's context, so one order's
// calls share its trace) and is counted in sitebus_http_client_requests_total.
func InstrumentTransport(rt http.RoundTripper, target string, reg prometheus.Registerer, tp trace.TracerProvider) http.RoundTripper {
	counter := Register(reg, clientRequests)
	counted := roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		code := "error"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		counter.WithLabelValues(target, r.Method, code).Inc()
		return resp, err
	})
	opts := []otelhttp.Option{otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string {
		return target + " " + r.Method + " " + r.URL.Path
	})}
	if tp != nil {
		opts = append(opts, otelhttp.WithTracerProvider(tp))
	}
	return otelhttp.NewTransport(counted, opts...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
