package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a one-line progress bar (count, rate, ETA) on a
// terminal. It is written here, ~60 lines, rather than taken from a
// library: it needs only \r redraws, and the project's dependency list is
// closed. Whether the writer is a terminal is decided by the caller
// (isTerminal), so tests can draw it on a buffer; when it is not, every
// call does nothing, so piped output stays clean.
type progress struct {
	w            io.Writer
	total        int
	on           bool
	now          func() time.Time
	start, drawn time.Time
	done         int
}

// newProgress returns a bar for total items on w, drawn only when on;
// now is the clock (nil: time.Now).
func newProgress(w io.Writer, total int, on bool, now func() time.Time) *progress {
	if now == nil {
		now = time.Now
	}
	return &progress{w: w, total: total, on: on && total > 0, now: now, start: now()}
}

// update records done items and redraws at most ten times a second (and
// always at the last item). Callers serialise calls.
func (p *progress) update(done, _ int) {
	if !p.on {
		return
	}
	p.done = done
	t := p.now()
	if done < p.total && t.Sub(p.drawn) < 100*time.Millisecond {
		return
	}
	p.drawn = t
	el := t.Sub(p.start).Seconds()
	rate := 0.0
	if el > 0 {
		rate = float64(done) / el
	}
	eta := "--:--"
	if rate > 0 {
		s := int(float64(p.total-done)/rate + 0.5)
		eta = fmt.Sprintf("%d:%02d", s/60, s%60)
	}
	const width = 30
	fill := width * done / p.total
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d designs  %.1f/s  ETA %s ", strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, p.total, rate, eta)
}

// finish ends the bar's line.
func (p *progress) finish() {
	if p.on && p.done > 0 {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a character device (a terminal), not a
// pipe, a file or a buffer.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
