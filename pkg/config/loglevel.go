package config

import (
	"fmt"
	"slices"
	"strings"
)

// EnvLogLevel is the variable the Python agent's documentation gives for
// its log level (`WALDUR_LOG_LEVEL=DEBUG waldur_site_agent -m ...`); it
// overrides the file's log_level.
const EnvLogLevel = "WALDUR_LOG_LEVEL"

// Where the effective log level came from, for messages and `config check`.
const (
	LogLevelFromDefault = "default"
	LogLevelFromFile    = "log_level"
	LogLevelFromEnv     = EnvLogLevel
)

// ParseLogLevel returns level in the Python agent's spelling (one of
// DEBUG, INFO, WARNING, ERROR, CRITICAL, as Python's logging names them),
// accepting any case and surrounding spaces, or an error listing them.
func ParseLogLevel(level string) (string, error) {
	up := strings.ToUpper(strings.TrimSpace(level))
	if !slices.Contains(logLevels, up) {
		return "", fmt.Errorf("%q is not one of %s", level, strings.Join(logLevels, ", "))
	}
	return up, nil
}

// LogLevelSource says where LogLevel came from: LogLevelFromDefault,
// LogLevelFromFile or LogLevelFromEnv.
func (r *Root) LogLevelSource() string { return r.logLevelFrom }

// logLevelFromEnv applies WALDUR_LOG_LEVEL over the file's log_level. As
// for the period variables, only an unset variable leaves the file's
// value: one set to "" or to a name Python's logging does not have is an
// error naming the variable, so `config check` refuses what `run` would.
func (r *Root) logLevelFromEnv(lookupEnv func(string) (string, bool)) *FieldError {
	v, ok := lookupEnv(EnvLogLevel)
	if !ok {
		return nil
	}
	if strings.TrimSpace(v) == "" {
		return envError(EnvLogLevel, "is set but empty; unset it for the file's log_level")
	}
	level, err := ParseLogLevel(v)
	if err != nil {
		return envError(EnvLogLevel, "%v", err)
	}
	r.LogLevel, r.logLevelFrom = level, LogLevelFromEnv
	return nil
}
