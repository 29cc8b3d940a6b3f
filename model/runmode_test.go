package model_test

import (
	"strings"
	"testing"

	"github.com/collsim/collsim/model"
)

func TestParseLaunch(t *testing.T) {
	for _, c := range []struct {
		in   string
		want model.Launch
		err  string
	}{
		{"process-per-gpu", model.LaunchProcessPerGPU, ""},
		{"single-process", model.LaunchSingleProcess, ""},
		{" Single-Process ", model.LaunchSingleProcess, ""},
		{"", "", `unknown launch mode ""`},
		{"one-thread", "", `unknown launch mode "one-thread" (known: process-per-gpu, single-process)`},
	} {
		got, err := model.ParseLaunch(c.in)
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ParseLaunch(%q) = %q, %v; want an error containing %q", c.in, got, err, c.err)
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("ParseLaunch(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func TestRunSpec(t *testing.T) {
	for _, c := range []struct {
		spec     model.RunSpec
		mode     model.Launch
		launches int // on a node of 8 GPUs
		str      string
	}{
		{model.RunSpec{}, model.LaunchProcessPerGPU, 1, "process-per-gpu"},
		{model.RunSpec{Launch: "process-per-gpu", VM: true}, model.LaunchProcessPerGPU, 1, "process-per-gpu, vm"},
		{model.RunSpec{Launch: "single-process"}, model.LaunchSingleProcess, 8, "single-process"},
	} {
		m, err := c.spec.Mode()
		if err != nil || m != c.mode {
			t.Errorf("%+v: mode %q, %v; want %q", c.spec, m, err, c.mode)
		}
		if err := c.spec.Validate(); err != nil {
			t.Errorf("%+v: %v", c.spec, err)
		}
		if n := c.spec.SerialLaunches(8); n != c.launches {
			t.Errorf("%+v: %d serial launches on 8 GPUs, want %d", c.spec, n, c.launches)
		}
		if s := c.spec.String(); s != c.str {
			t.Errorf("%+v: String %q, want %q", c.spec, s, c.str)
		}
	}
	if n := (model.RunSpec{Launch: "single-process"}).SerialLaunches(1); n != 1 {
		t.Errorf("single-process on 1 GPU: %d serial launches, want 1", n)
	}
	bad := model.RunSpec{Launch: "per-rack"}
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), `launch: unknown launch mode "per-rack"`) {
		t.Errorf("Validate(%+v) = %v", bad, err)
	}
}

// TestClusterRunInvalid: Build refuses an unknown launch mode, naming the
// key and the value.
func TestClusterRunInvalid(t *testing.T) {
	spec := model.ClusterSpec{Node: model.NodeSpec{Name: "n", GPU: "A100-SXM4", GPUs: 2, NVLink: model.NVLinkSpec{Kind: "nvswitch"},
		Sockets: []model.SocketSpec{{HostBridges: []model.BridgeSpec{{GPUs: []int{0, 1}}}}}}, Nodes: 1}
	if _, err := spec.Build(); err != nil {
		t.Fatal(err)
	}
	spec.Run.Launch = "threads"
	if _, err := spec.Build(); err == nil || !strings.Contains(err.Error(), `run: launch: unknown launch mode "threads"`) {
		t.Errorf("Build with launch %q: %v", spec.Run.Launch, err)
	}
}
