package vmboot

import (
	"fmt"
	"regexp"
	"strings"
)

// The install script is read the way bash would run these few kinds of
// line, no further: literal assignments (VAR="value", export VAR=value),
// and commands whose words may be quoted and refer to $VAR or ${VAR}.

var assignRe = regexp.MustCompile(`^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=("[^"$` + "`" + `\\]*"|'[^']*'|[^\s"'$` + "`" + `;|&()]*)\s*$`)

// assignments collects the script's literal variable assignments (a later
// one wins, as in the shell). Assignments from command substitutions are
// not literal and left out.
func assignments(script string) map[string]string {
	vars := map[string]string{}
	for _, line := range strings.Split(script, "\n") {
		if m := assignRe.FindStringSubmatch(line); m != nil {
			vars[m[1]] = strings.Trim(m[2], `"'`)
		}
	}
	return vars
}

// words splits a command line into words: whitespace separates words
// outside quotes, single quotes keep their text, double quotes and bare
// words expand $VAR and ${VAR} from vars (an unknown one is an error, as
// `set -u` would make it). The pipe and command substitution characters
// become words of their own. Word-level only: enough for the lines the
// templates write.
func words(line string, vars map[string]string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	end := func() {
		if inWord {
			out = append(out, cur.String())
			cur.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t':
			end()
		case c == '|' || c == '(' || c == ')':
			end()
			out = append(out, string(c))
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated ' in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			j := strings.IndexByte(line[i+1:], '"')
			if j < 0 {
				return nil, fmt.Errorf("unterminated \" in %q", line)
			}
			s, err := expand(line[i+1:i+1+j], vars)
			if err != nil {
				return nil, err
			}
			cur.WriteString(s)
			inWord = true
			i += j + 1
		case c == '$' && i+1 < len(line) && line[i+1] == '(':
			end()
			out = append(out, "$(")
			i++
		case c == '$':
			n, v, err := variable(line[i:], vars)
			if err != nil {
				return nil, err
			}
			cur.WriteString(v)
			inWord = true
			i += n - 1
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	end()
	return out, nil
}

var varRe = regexp.MustCompile(`^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)

// variable expands the $VAR or ${VAR} at the start of s, returning how
// many bytes it took.
func variable(s string, vars map[string]string) (int, string, error) {
	m := varRe.FindStringSubmatch(s)
	if m == nil {
		return 1, "$", nil
	}
	name := m[1] + m[2]
	v, ok := vars[name]
	if !ok {
		return 0, "", fmt.Errorf("$%s is not set in the script", name)
	}
	return len(m[0]), v, nil
}

func expand(s string, vars map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		n, v, err := variable(s[i:], vars)
		if err != nil {
			return "", err
		}
		b.WriteString(v)
		i += n - 1
	}
	return b.String(), nil
}
