package saga

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// FormatSaga writes s for people: its status, why it failed or is parked,
// and a table of its steps (for sitebus sagas show).
func FormatSaga(w io.Writer, s Saga) error {
	ew := &errWriter{w: w}
	ew.printf("saga:        %s\n", s.ID)
	ew.printf("definition:  %s\n", s.Definition)
	ew.printf("status:      %s\n", s.Status)
	if s.Error != "" {
		ew.printf("error:       %s\n", s.Error)
	}
	if s.Status == StatusParked {
		ew.printf("parked:      %s (retry resumes it %s; parked %d time(s))\n", s.ParkReason, s.ParkedIn, s.Parks)
	}
	ew.printf("created:     %s\n", s.Created.Format(time.RFC3339))
	ew.printf("updated:     %s\n", s.Updated.Format(time.RFC3339))
	if s.Owner != "" {
		lease := "released"
		if !s.LeaseUntil.IsZero() {
			lease = "until " + s.LeaseUntil.Format(time.RFC3339)
		}
		ew.printf("owner:       %s (lease %s)\n", s.Owner, lease)
	}
	if s.TraceParent != "" {
		ew.printf("traceparent: %s\n", s.TraceParent)
	}
	if len(s.Input) > 0 {
		ew.printf("input:       %s\n", oneLine(string(s.Input), 200))
	}
	if ew.err != nil {
		return ew.err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tSTEP\tSTATUS\tTRIES\tUNDO TRIES\tUPDATED\tDETAIL")
	for i, st := range s.Steps {
		var detail []string
		if st.InFlight {
			detail = append(detail, "attempt in flight")
		}
		if !st.RetryAt.IsZero() {
			detail = append(detail, "retry at "+st.RetryAt.Format(time.RFC3339))
		}
		if st.Error != "" {
			detail = append(detail, "error: "+st.Error)
		}
		if st.CompensationError != "" {
			detail = append(detail, "compensation error: "+st.CompensationError)
		}
		if len(st.Output) > 0 {
			detail = append(detail, "output: "+string(st.Output))
		}
		updated := "-"
		if !st.UpdatedAt.IsZero() {
			updated = st.UpdatedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\n", i+1, st.Name, st.Status, st.Attempts, st.CompensationAttempts, updated, oneLine(strings.Join(detail, "; "), 160))
	}
	return tw.Flush()
}

// FormatList writes one line per saga (for sitebus sagas list).
func FormatList(w io.Writer, sagas []Saga) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tDEFINITION\tSTATUS\tSTEP\tUPDATED\tERROR")
	for _, s := range sagas {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Definition, s.Status, currentStep(s), s.Updated.Format(time.RFC3339), oneLine(firstNonEmpty(s.ParkReason, s.Error, "-"), 100))
	}
	return tw.Flush()
}

// currentStep names the step a saga is at, or how far it got.
func currentStep(s Saga) string {
	for _, want := range []StepStatus{StepCompensating, StepRunning, StepFailed} {
		for _, st := range s.Steps {
			if st.Status == want {
				return st.Name + " (" + string(want) + ")"
			}
		}
	}
	done := 0
	for _, st := range s.Steps {
		if st.Status == StepDone {
			done++
		}
	}
	return fmt.Sprintf("%d/%d done", done, len(s.Steps))
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func oneLine(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}
