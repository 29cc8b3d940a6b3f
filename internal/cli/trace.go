package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/collsim/collsim/model"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

// traceFlags are predict's --trace and --trace-size.
func traceFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "trace", Usage: "write a Chrome/Perfetto timeline `FILE.json` of one simulated call (open it in ui.perfetto.dev)"},
		&cli.StringFlag{Name: "trace-size", Usage: "the sweep `SIZE` --trace simulates (default: the largest)"},
	}
}

// traceRequest is what --trace asks for, checked before any simulation.
type traceRequest struct {
	path string
	size model.Bytes
}

// traceOptions reads --trace and --trace-size: the size must be one of the
// sweep's, the engine the DES, and the path writable.
func traceOptions(c *cli.Context, req sim.Request) (*traceRequest, error) {
	path := c.String("trace")
	if path == "" {
		if c.IsSet("trace-size") {
			return nil, badInputf("predict: --trace-size needs --trace FILE.json")
		}
		return nil, nil
	}
	if req.Engine != sim.EngineDES {
		return nil, badInputf("predict: --trace needs --engine des (the analytic engine has no timeline)")
	}
	size := req.Sizes[len(req.Sizes)-1]
	if s := c.String("trace-size"); s != "" {
		b, err := model.ParseBytes(s)
		if err != nil {
			return nil, badInputf("predict: --trace-size: %w", err)
		}
		found := false
		for _, x := range req.Sizes {
			found = found || x == b
		}
		if !found {
			return nil, badInputf("predict: --trace-size %s is not a size of the sweep %s (%s); give one of them", model.FormatBytes(b), sizeOptions(c), sweepSizes(req.Sizes))
		}
		size = b
	}
	if err := checkOutput("predict", "--trace", path); err != nil {
		return nil, err
	}
	if err := notAnInput(c, "predict", "--trace", path); err != nil {
		return nil, err
	}
	return &traceRequest{path: path, size: size}, nil
}

// sweepSizes lists sizes for an error, eliding the middle of long lists.
func sweepSizes(s []model.Bytes) string {
	var parts []string
	for i, b := range s {
		if len(s) > 8 && i == 3 {
			parts = append(parts, "...")
		}
		if len(s) > 8 && i >= 3 && i < len(s)-3 {
			continue
		}
		parts = append(parts, model.FormatBytes(b))
	}
	return strings.Join(parts, ", ")
}

// writeTrace simulates the traced call and writes the trace next to its
// final path first, so a failed run leaves no partial file.
func writeTrace(c *cli.Context, envr *sim.Env, req sim.Request, tr *traceRequest) (sim.TraceInfo, error) {
	f, err := os.CreateTemp(filepath.Dir(tr.path), ".collsim-trace-*")
	if err != nil {
		return sim.TraceInfo{}, badInputf("predict: --trace %s: %v", tr.path, err)
	}
	tmp := f.Name()
	err = f.Chmod(0o644)
	var info sim.TraceInfo
	if err == nil {
		_, info, err = envr.Trace(c.Context, req, tr.size, f, sim.TraceOptions{})
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, tr.path)
	}
	if err != nil {
		os.Remove(tmp)
		return info, budgetInput(fmt.Errorf("predict: --trace %s: %w", tr.path, err))
	}
	return info, nil
}
