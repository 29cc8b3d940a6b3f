// Package reports renders collsim results for people: nccl-tests-style
// tables, CSV, JSON, Markdown and self-contained HTML with plots made by
// gonum/plot. Writes are atomic (temp file + rename).
//
// reports imports model, sim and calibrate; nothing in collsim imports reports
// except internal/cli.
package reports
