package app

import "testing"

func TestRedactorClean(t *testing.T) {
	r := RedactorOf("long-secret", "secret", "")
	tests := map[string]struct{ in, want string }{
		"every secret, the longer first":  {"a long-secret and a secret", "a [REDACTED] and a [REDACTED]"},
		"a URL's password":                {`Get "https://admin:hunter2@keycloak.example.com/auth/": EOF`, `Get "https://admin:xxxxx@keycloak.example.com/auth/": EOF`},
		"a URL's user alone stays":        {"nats://sitebus@nats:4222", "nats://sitebus@nats:4222"},
		"two URLs in one message":         {"amqp://u:p@a/ then wss://v:q@b/", "amqp://u:xxxxx@a/ then wss://v:xxxxx@b/"},
		"an empty secret removes nothing": {"nothing here", "nothing here"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := r.Clean(tc.in); got != tc.want {
				t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}
