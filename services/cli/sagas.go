package cli

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/sitebus/sitebus/pkg/saga"
)

// sagasCmd inspects and resumes sagas in the running sitebus's saga bucket.
func sagasCmd() *cobra.Command {
	c := &cobra.Command{Use: "sagas", Short: "Inspect sagas and resume parked ones"}
	var nf natsFlags
	var bucket string
	var statuses []string
	var definition string
	coordinator := func(cmd *cobra.Command) (*saga.Coordinator, func(), error) {
		b, closeFn, err := nf.connect(cmd.Context())
		if err != nil {
			return nil, nil, err
		}
		co, err := saga.New(b.JetStream(), saga.Config{Bucket: bucket, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			closeFn()
			return nil, nil, err
		}
		return co, closeFn, nil
	}
	list := &cobra.Command{
		Use:     "list [--status parked] [--definition NAME]",
		Short:   "List sagas, oldest first",
		Example: "  sitebus sagas list --status parked\n  sitebus sagas list --status running,compensating",
		RunE: func(cmd *cobra.Command, _ []string) error {
			co, closeFn, err := coordinator(cmd)
			if err != nil {
				return err
			}
			defer closeFn()
			f := saga.Filter{Definition: definition}
			for _, s := range statuses {
				st := saga.Status(strings.TrimSpace(s))
				switch st {
				case saga.StatusRunning, saga.StatusCompensating, saga.StatusSucceeded, saga.StatusCompensated, saga.StatusFailed, saga.StatusParked:
					f.Status = append(f.Status, st)
				default:
					return fmt.Errorf("--status %q: want running, compensating, succeeded, compensated, failed or parked", s)
				}
			}
			sagas, err := co.List(cmd.Context(), f)
			if err != nil {
				return err
			}
			return saga.FormatList(cmd.OutOrStdout(), sagas)
		},
	}
	list.Flags().StringSliceVar(&statuses, "status", nil, "only sagas in these statuses (comma-separated)")
	list.Flags().StringVar(&definition, "definition", "", "only sagas of this definition")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show one saga with its steps, attempts and errors",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			co, closeFn, err := coordinator(cmd)
			if err != nil {
				return err
			}
			defer closeFn()
			s, err := co.Get(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return saga.FormatSaga(cmd.OutOrStdout(), s)
		},
	}
	retry := &cobra.Command{
		Use:   "retry ID...",
		Short: "Resume parked sagas: the failing compensation gets a fresh attempt budget",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			co, closeFn, err := coordinator(cmd)
			if err != nil {
				return err
			}
			defer closeFn()
			var failed int
			for _, id := range args {
				s, err := co.Retry(cmd.Context(), id)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "saga %s: %v\n", id, err)
					failed++
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "saga %s resumed (%s); a running coordinator picks it up\n", id, s.Status)
			}
			if failed > 0 {
				return fmt.Errorf("%d of %d retries failed", failed, len(args))
			}
			return nil
		},
	}
	for _, sc := range []*cobra.Command{list, show, retry} {
		nf.add(sc)
		sc.Flags().StringVar(&bucket, "bucket", saga.DefaultBucket, "key-value bucket holding saga state")
		c.AddCommand(sc)
	}
	return c
}
