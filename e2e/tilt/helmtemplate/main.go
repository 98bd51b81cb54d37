// Command helmtemplate renders a Helm chart as `helm template` does, with
// the Helm library the e2e module pins (the one e2e/deploy tests the chart
// with), so the Tiltfile needs no helm binary:
//
//	go run ./e2e/tilt/helmtemplate -chart deploy/helm/sitebus -name sitebus \
//	  -namespace sitebus-dev -f deploy/dev/values.yaml -set-file config=deploy/dev/config.yaml
//
// The manifests go to stdout in template file order, NOTES.txt left out.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// listFlag collects a repeated flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type options struct {
	chart, name, namespace string
	valueFiles, setFiles   listFlag
}

func main() {
	var o options
	flag.StringVar(&o.chart, "chart", "deploy/helm/sitebus", "chart directory")
	flag.StringVar(&o.name, "name", "sitebus", "release name")
	flag.StringVar(&o.namespace, "namespace", "default", "release namespace")
	flag.Var(&o.valueFiles, "f", "values file (repeatable; later files win)")
	flag.Var(&o.setFiles, "set-file", "top-level value from a file's content, key=path (repeatable)")
	flag.Parse()
	if err := render(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "helmtemplate:", err)
		os.Exit(1)
	}
}

func render(w io.Writer, o options) error {
	ch, err := loader.Load(o.chart)
	if err != nil {
		return err
	}
	vals := map[string]any{}
	for _, f := range o.valueFiles {
		v, err := chartutil.ReadValuesFile(f)
		if err != nil {
			return err
		}
		vals = mergeMaps(vals, v)
	}
	for _, kv := range o.setFiles {
		key, file, ok := strings.Cut(kv, "=")
		if !ok || key == "" || strings.Contains(key, ".") {
			return fmt.Errorf("-set-file %q: want key=path with a top-level key", kv)
		}
		b, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		vals[key] = string(b)
	}
	rv, err := chartutil.ToRenderValues(ch, vals,
		chartutil.ReleaseOptions{Name: o.name, Namespace: o.namespace, Revision: 1, IsInstall: true},
		chartutil.DefaultCapabilities)
	if err != nil {
		return err
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(out))
	for name, text := range out {
		if path.Base(name) == "NOTES.txt" || strings.TrimSpace(text) == "" {
			continue
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, err := fmt.Fprintf(w, "---\n# Source: %s\n%s\n", name, strings.TrimLeft(out[name], "-\n")); err != nil {
			return err
		}
	}
	return nil
}

// mergeMaps is b over a, recursively through maps, as `helm -f a -f b`.
func mergeMaps(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if bm, ok := v.(map[string]any); ok {
			if am, ok := out[k].(map[string]any); ok {
				out[k] = mergeMaps(am, bm)
				continue
			}
		}
		out[k] = v
	}
	return out
}
