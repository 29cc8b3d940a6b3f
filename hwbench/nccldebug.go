package hwbench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// ncclDebugMaxLines caps the NCCL_DEBUG=INFO lines a report keeps per
// process (an 8-GPU node prints a few thousand at init).
const ncclDebugMaxLines = 20000

// startDebugCapture points NCCL's INFO output at a temporary file before
// the first communicator. It returns the file ("" when not capturing: the
// user set NCCL_DEBUG_FILE, whose file then holds the lines) and a note.
func (r *runner) startDebugCapture(coll Collectives) (path, note string, err error) {
	if f := r.o.Getenv("NCCL_DEBUG_FILE"); f != "" {
		return "", fmt.Sprintf("NCCL_DEBUG_FILE=%s is set: NCCL's log goes there, not into this report", f), nil
	}
	fh, err := os.CreateTemp("", "hwbench-nccl-debug-*.log")
	if err != nil {
		return "", "", fmt.Errorf("NCCL_DEBUG capture: %w", err)
	}
	path = fh.Name()
	fh.Close()
	if err := coll.CaptureDebug(path); err != nil {
		os.Remove(path)
		return "", "", fmt.Errorf("NCCL_DEBUG capture: %w", err)
	}
	return path, "", nil
}

// finishDebugCapture reads the captured lines (every process's, gathered
// to every rank), removes the file and fills res's log, transports and
// NVLS availability.
func (r *runner) finishDebugCapture(ctx context.Context, res *NCCLResult, path string) error {
	var mine []byte
	if path != "" {
		mine, _ = os.ReadFile(path)
		os.Remove(path)
	}
	lines := splitDebug(mine)
	if r.boot != nil {
		all, err := r.boot.AllGather(ctx, []byte(strings.Join(lines, "\n")))
		if err != nil {
			return err
		}
		lines = nil
		for _, b := range all {
			lines = append(lines, splitDebug(b)...)
		}
	}
	if len(lines) > ncclDebugMaxLines*max(r.nranks, 1) {
		res.Notes = append(res.Notes, fmt.Sprintf("NCCL debug log cut to %d of %d lines", ncclDebugMaxLines*max(r.nranks, 1), len(lines)))
		lines = lines[:ncclDebugMaxLines*max(r.nranks, 1)]
	}
	res.DebugLog = lines
	res.Transports, res.NVLS = summarizeDebug(lines)
	return nil
}

func splitDebug(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && len(out) < ncclDebugMaxLines {
		if l := strings.TrimRight(sc.Text(), "\r"); l != "" {
			out = append(out, l)
		}
	}
	return out
}

var (
	// "Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read" and
	// "... [send] via NET/IB/0/GDRDMA": the transport after "via".
	reVia = regexp.MustCompile(`\bvia ([A-Za-z0-9_/.-]+)`)
	// nvls.cc: "NVLS multicast support is [not ]available on dev N".
	reNVLS = regexp.MustCompile(`NVLS multicast support is (not )?available`)
)

// summarizeDebug lists the distinct transports of the channel lines and
// says whether NCCL found NVLS (NVLink SHARP) multicast: "available", "not
// available", or "" when the log does not say.
func summarizeDebug(lines []string) (transports []string, nvls string) {
	seen := map[string]bool{}
	for _, l := range lines {
		if m := reVia.FindStringSubmatch(l); m != nil && !seen[m[1]] {
			seen[m[1]] = true
			transports = append(transports, m[1])
		}
		if m := reNVLS.FindStringSubmatch(l); m != nil {
			switch {
			case m[1] == "":
				nvls = "available"
			case nvls == "":
				nvls = "not available"
			}
		}
	}
	return transports, nvls
}
