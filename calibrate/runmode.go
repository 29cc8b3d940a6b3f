package calibrate

import (
	"fmt"
	"strconv"

	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
)

// RunLaunch reads the launch mode a results table ran with from its header:
// nccl-tests prints "nGpus N", the GPUs one thread drives (-g N), so N > 1
// is single-process and N = 1 process-per-gpu. n is N; ok is false when
// the header does not say. A malformed N is an error.
func RunLaunch(r *ingest.Run) (l model.Launch, n int, ok bool, err error) {
	if r == nil {
		return "", 0, false, nil
	}
	v, has := r.Params["nGpus"]
	if !has {
		return "", 0, false, nil
	}
	n, err = strconv.Atoi(v)
	if err != nil || n < 1 {
		return "", 0, false, fmt.Errorf("the results header says nGpus %q, want a GPU count", v)
	}
	if n > 1 {
		return model.LaunchSingleProcess, n, true, nil
	}
	return model.LaunchProcessPerGPU, n, true, nil
}

// MeasuredLaunch models the launch mode the measured runs state when the
// cluster spec chose none (spec.Run.Launch empty), and says so: the
// single-process mode when every run whose header says is a single-process
// run. Runs that disagree leave the spec as it is, with a note saying so.
func MeasuredLaunch(spec *model.ClusterSpec, arts []*ingest.Artifact) (string, error) {
	if spec.Run.Launch != "" {
		return "", nil
	}
	single, per, gpus := 0, 0, 0
	for _, a := range arts {
		for i := range a.Runs {
			l, n, ok, err := RunLaunch(a.Runs[i])
			if err != nil {
				return "", fmt.Errorf("calibrate: %s: table %d: %w", a.File, i, err)
			}
			switch {
			case !ok:
			case l == model.LaunchSingleProcess:
				single, gpus = single+1, n
			default:
				per++
			}
		}
	}
	switch {
	case single > 0 && per > 0:
		return fmt.Sprintf("the measured files mix runs of one process per GPU and of one process driving several (nGpus > 1); modelled as %s (--launch chooses)", model.LaunchProcessPerGPU), nil
	case single > 0:
		spec.Run.Launch = string(model.LaunchSingleProcess)
		// nccl-tests' nGpus is per thread (-g), and threads (-t) launch at
		// once: a thread issues nGpus launches, not the node's.
		spec.Run.ThreadGPUs = gpus
		return fmt.Sprintf("modelling --launch %s: the measured files ran one thread driving %d GPUs (nGpus %d; override with --launch %s)", model.LaunchSingleProcess, gpus, gpus, model.LaunchProcessPerGPU), nil
	}
	return "", nil
}
