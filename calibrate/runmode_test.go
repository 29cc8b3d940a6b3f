package calibrate_test

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/calibrate"
	"github.com/collsim/collsim/ingest"
	"github.com/collsim/collsim/model"
)

// TestMeasuredLaunch: a file of nccl-tests -g 4 runs (Snellius 1x4 H100,
// "nGpus 4") makes a cluster that chose no launch mode single-process, with
// a note; mpirun runs (Snellius 2x4, "nGpus 1") leave it alone; a file
// with both kinds of run (the thanos file: -g 8, then mpirun -np 8) is
// noted and left alone; a launch mode the user chose is kept.
func TestMeasuredLaunch(t *testing.T) {
	g4 := rawFile(t, "nccltests_h100sxm_1x4_nvlink_snellius_1.txt")
	var spec model.ClusterSpec
	note, err := calibrate.MeasuredLaunch(&spec, []*ingest.Artifact{g4})
	if err != nil || spec.Run.Launch != string(model.LaunchSingleProcess) || spec.Run.ThreadGPUs != 4 || !strings.Contains(note, "nGpus 4") {
		t.Errorf("-g 4 file: launch %q, %d GPUs per thread, note %q, %v", spec.Run.Launch, spec.Run.ThreadGPUs, note, err)
	}
	// nGpus is per thread (nccl-tests -g; -t threads launch at once): a
	// -t 2 -g 4 header on an 8-GPU node is 4 launches per thread.
	t2g4 := &ingest.Artifact{File: "t2g4.txt", Runs: []*ingest.Run{{Params: map[string]string{"nThread": "2", "nGpus": "4"}}}}
	spec = model.ClusterSpec{}
	if _, err := calibrate.MeasuredLaunch(&spec, []*ingest.Artifact{t2g4}); err != nil || spec.Run.ThreadGPUs != 4 || spec.Run.SerialLaunches(8) != 4 {
		t.Errorf("-t 2 -g 4: %d GPUs per thread, %d serial launches on 8 GPUs, %v; want 4", spec.Run.ThreadGPUs, spec.Run.SerialLaunches(8), err)
	}
	spec = model.ClusterSpec{}
	note, err = calibrate.MeasuredLaunch(&spec, []*ingest.Artifact{rawFile(t, "nccltests_h100sxm_2x4_ib-ndr200x4_snellius_1.txt")})
	if err != nil || spec.Run.Launch != "" || note != "" {
		t.Errorf("mpirun file: launch %q, note %q, %v", spec.Run.Launch, note, err)
	}
	spec = model.ClusterSpec{}
	note, err = calibrate.MeasuredLaunch(&spec, []*ingest.Artifact{rawFile(t, "nccltests_a100sxm80_1x8_nvswitch_blog-thanos_1.txt")})
	if err != nil || spec.Run.Launch != "" || !strings.Contains(note, "mix") {
		t.Errorf("mixed file: launch %q, note %q, %v", spec.Run.Launch, note, err)
	}
	spec = model.ClusterSpec{Run: model.RunSpec{Launch: string(model.LaunchProcessPerGPU)}}
	note, err = calibrate.MeasuredLaunch(&spec, []*ingest.Artifact{g4})
	if err != nil || spec.Run.Launch != string(model.LaunchProcessPerGPU) || note != "" {
		t.Errorf("chosen launch: %q, note %q, %v", spec.Run.Launch, note, err)
	}
	bad := &ingest.Artifact{File: "x.txt", Runs: []*ingest.Run{{Params: map[string]string{"nGpus": "eight"}}}}
	if _, err := calibrate.MeasuredLaunch(&model.ClusterSpec{}, []*ingest.Artifact{bad}); err == nil || !strings.Contains(err.Error(), `x.txt: table 0: the results header says nGpus "eight"`) {
		t.Errorf("nGpus eight: %v", err)
	}
}
