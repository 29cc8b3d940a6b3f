// Package calibrate holds the model to what real machines print.
//
// It works on the records package ingest reads: BuildDataset turns
// Artifacts into series and link observations, Fit (gonum/optimize,
// gonum/mat) turns them into a calibration profile, and Validate compares
// model and measurement point by point and names likely causes. The corpus
// accuracy harness is in calibrate/accuracy.
//
// calibrate imports ingest, model and sim; it never imports hwbench or
// scenarios, so fitting works on a laptop with nothing but the files.
package calibrate
