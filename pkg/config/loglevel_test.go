package config

import "testing"

func TestLogLevelPrecedence(t *testing.T) {
	tests := map[string]struct {
		file     []string
		env      map[string]string
		want     string
		wantFrom string
	}{
		"without file key or variable the Python default INFO": {
			want: "INFO", wantFrom: LogLevelFromDefault,
		},
		"the file's log_level, upper-cased as Python does": {
			file: []string{"log_level: debug"}, want: "DEBUG", wantFrom: LogLevelFromFile,
		},
		"WALDUR_LOG_LEVEL without a file key": {
			env: map[string]string{EnvLogLevel: "warning"}, want: "WARNING", wantFrom: LogLevelFromEnv,
		},
		"WALDUR_LOG_LEVEL wins over the file's log_level": {
			file: []string{"log_level: ERROR"}, env: map[string]string{EnvLogLevel: " Debug "},
			want: "DEBUG", wantFrom: LogLevelFromEnv,
		},
		"CRITICAL is a level": {
			env: map[string]string{EnvLogLevel: "critical"}, want: "CRITICAL", wantFrom: LogLevelFromEnv,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := mustParse(t, conf(nil, tc.file...), envOf(tc.env))
			if r.LogLevel != tc.want || r.LogLevelSource() != tc.wantFrom {
				t.Errorf("log level %q from %q, want %q from %q", r.LogLevel, r.LogLevelSource(), tc.want, tc.wantFrom)
			}
		})
	}
}

func TestLogLevelErrors(t *testing.T) {
	tests := map[string]struct {
		file []string
		env  map[string]string
		want []string
	}{
		"a variable naming no Python level": {
			env:  map[string]string{EnvLogLevel: "verbose"},
			want: []string{`environment variable WALDUR_LOG_LEVEL: "verbose" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`},
		},
		"slog's WARN is not Python's name": {
			env:  map[string]string{EnvLogLevel: "warn"},
			want: []string{`environment variable WALDUR_LOG_LEVEL: "warn" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`},
		},
		"set but empty is not unset": {
			env:  map[string]string{EnvLogLevel: ""},
			want: []string{`environment variable WALDUR_LOG_LEVEL: is set but empty; unset it for the file's log_level`},
		},
		"a bad file value is reported even while the variable overrides it": {
			file: []string{"log_level: loud"},
			env:  map[string]string{EnvLogLevel: "INFO"},
			want: []string{`config.yaml:7: log_level: "loud" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(conf(nil, tc.file...), "config.yaml", envOf(tc.env))
			wantProblems(t, err, tc.want...)
		})
	}
}

func TestParseLogLevel(t *testing.T) {
	tests := map[string]struct {
		in, want string
		wantErr  bool
	}{
		"upper case":            {in: "ERROR", want: "ERROR"},
		"lower case":            {in: "info", want: "INFO"},
		"mixed case and spaces": {in: " Warning ", want: "WARNING"},
		"unknown name":          {in: "trace", wantErr: true},
		"empty":                 {in: "", wantErr: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := ParseLogLevel(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("ParseLogLevel(%q) = %q, %v", tc.in, got, err)
			}
		})
	}
}
