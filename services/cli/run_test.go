package cli

import (
	"strings"
	"testing"
)

// The Python agent's command line (`waldur_site_agent -m MODE -c FILE`,
// also --mode and --config-file) reaches `sitebus run`; what cannot work
// is refused before anything starts, with a message saying why.
func TestRunTakesThePythonAgentsCommandLine(t *testing.T) {
	good := writeConfig(t, withOffering()...)
	bad := writeConfig(t, replace(withOffering(), "backend_type:", "    backend_type: slurm")...)
	tests := map[string]struct {
		args []string
		env  map[string]string
		want string // a part of the error
	}{
		"an unknown mode names the Python agent's modes": {
			args: []string{"-m", "order", "-c", good},
			want: `unknown mode "order" (the Python agent's modes: order_process, report, membership_sync, event_process)`,
		},
		"a mode with --only is refused": {
			args: []string{"--mode", "membership_sync", "--only", "membership", "-c", good},
			want: "--mode membership_sync and --only cannot be combined: the mode names its services itself (quota, drift, membership, keycloak-sync)",
		},
		"--config-file is read as -c (a bad file is reported)": {
			args: []string{"-m", "order_process", "--config-file", bad},
			want: bad + `:6: offerings[0] ("k8s").backend_type: "slurm" is not supported`,
		},
		"an invalid --log-level is refused": {
			args: []string{"-m", "report", "-c", good, "--log-level", "loud"},
			want: `--log-level: "loud" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`,
		},
		"an invalid WALDUR_LOG_LEVEL is refused": {
			args: []string{"-m", "report", "-c", good},
			env:  map[string]string{"WALDUR_LOG_LEVEL": "verbose"},
			want: `environment variable WALDUR_LOG_LEVEL: "verbose" is not one of DEBUG, INFO, WARNING, ERROR, CRITICAL`,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			args := append([]string{"run", "--data-dir", t.TempDir(), "--http-addr", "127.0.0.1:0"}, tc.args...)
			_, _, err := execute(t, args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run %v: err = %v\nwant one containing %s", tc.args, err, tc.want)
			}
		})
	}
}

// `config check` refuses a bad WALDUR_LOG_LEVEL as run does, and says
// which level applies and from where.
func TestConfigCheckShowsTheLogLevel(t *testing.T) {
	path := writeConfig(t, append(withOffering(), "log_level: error")...)
	tests := map[string]struct {
		env     string // WALDUR_LOG_LEVEL; "-" = unset
		want    string
		wantErr string
	}{
		"the file's log_level":                    {env: "-", want: "log level: ERROR (from log_level)"},
		"WALDUR_LOG_LEVEL over the file's":        {env: "debug", want: "log level: DEBUG (from WALDUR_LOG_LEVEL)"},
		"an invalid WALDUR_LOG_LEVEL is an error": {env: "trace", wantErr: `environment variable WALDUR_LOG_LEVEL: "trace" is not one of`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.env != "-" {
				t.Setenv("WALDUR_LOG_LEVEL", tc.env)
			}
			out, _, err := execute(t, "config", "check", "-c", path)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want one containing %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !strings.Contains(out, tc.want) {
				t.Errorf("config check: %v\n%s\nwant a line %q", err, out, tc.want)
			}
		})
	}
}

// `run --help` documents each mode's services.
func TestRunHelpListsTheModes(t *testing.T) {
	out, _, err := execute(t, "run", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"order_process    stomp-bridge, order, membership, keycloak-sync, saga-coordinator, cluster-provisioner",
		"report           usage-reporter",
		"membership_sync  quota, drift, membership, keycloak-sync",
		"event_process    stomp-bridge, order, quota, membership, keycloak-sync, saga-coordinator, cluster-provisioner",
		"-m, --mode",
		"--config-file",
		"--log-level",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q:\n%s", want, out)
		}
	}
}
