// Package accuracy scores the model on a validation corpus: a cases file in
// the shared/data cases.yaml format, each case a published nccl-tests run on
// known hardware. Run maps every case to a cluster (scenarios
// presets and overrides), predicts it uncalibrated and calibrated on other
// cases, and checks that degraded cases are diagnosed.
//
// It is apart from calibrate because it needs scenarios to build the case
// clusters; calibrate itself never imports scenarios.
package accuracy
