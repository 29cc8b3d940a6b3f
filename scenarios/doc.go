// Package scenarios turns what a user writes (cluster YAML files, command-line
// overrides, built-in node templates) into model.ClusterSpec values.
//
// It holds the node templates listed by `collsim presets`, the YAML schema
// (errors carry file:line:column), the flag overrides (--node, --nodes,
// --gpus-per-node, --gpu, --nics, --set) and the embedded default scenario.
// scenarios imports model only.
package scenarios
