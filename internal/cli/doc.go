// Package cli holds collsim's commands (urfave/cli/v2). It is the only place
// that wires the packages together: scenarios builds the cluster, sim predicts,
// study compares, scales and sweeps designs, calibrate reads measurements and
// fits, reports renders, hwbench measures. Commands map flags to the option
// structs of those packages and print what they return; they take no
// modelling decisions of their own.
//
// Every command writes to the writers it is given and returns an error; Main
// maps errors to exit codes: 0 success, 1 a check that ran and failed (for
// example validate outside tolerance), 2 bad input or usage.
package cli
