package cli

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// versionCmd prints the build's version and the Go toolchain and platform,
// what an operator is asked for in a bug report (the --version flag prints
// the version alone).
func versionCmd(version string) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of this build",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "sitebus %s (%s, %s/%s)\n", version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
