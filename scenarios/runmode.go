package scenarios

import (
	"github.com/collsim/collsim/model"
	yaml "go.yaml.in/yaml/v3"
)

// runKeys are the keys of the cluster file's run mapping.
const runKeys = "launch, vm"

// decodeRun reads the run key: {launch: process-per-gpu|single-process,
// vm: true|false}. Errors name the file, line and key.
func decodeRun(file string, v *yaml.Node) (model.RunSpec, error) {
	var r model.RunSpec
	if v.Kind != yaml.MappingNode {
		return r, errAt(file, v, "run: want a mapping (%s), got %s", runKeys, nodeWords(v))
	}
	if err := strictDecode(file, v, &r); err != nil {
		return r, err
	}
	if r.Launch != "" {
		l, err := model.ParseLaunch(r.Launch)
		if err != nil {
			return r, errAt(file, valueOrNode(v, "launch"), "run.launch: %v", err)
		}
		r.Launch = string(l)
	}
	return r, nil
}

// applyRun sets the run mode the --launch and --vm options give on top of
// spec's: launch "" and vm nil keep the spec's.
func applyRun(spec model.ClusterSpec, launch string, vm *bool) (model.ClusterSpec, error) {
	if launch != "" {
		l, err := model.ParseLaunch(launch)
		if err != nil {
			return spec, err
		}
		spec.Run.Launch = string(l)
	}
	if vm != nil {
		spec.Run.VM = *vm
	}
	return spec, nil
}
