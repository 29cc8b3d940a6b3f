// Package reports renders collsim results for people: self-contained HTML
// and GitHub-flavoured Markdown documents with plots made by gonum/plot.
//
// A command converts its results into a [Document]: a title, a one-paragraph
// executive summary with an optional [Verdict], the inputs and assumptions
// behind the numbers, and ordered [Section]s of blocks ([Paragraph], [Code],
// [Table], [Findings], [Verdict] and the plot specs [BusBWPlot], [TimePlot],
// [BarPlot], [ScalingPlot], [ParetoPlot], [LinkUtilPlot], [HeatMapPlot],
// [TopologyPlot]). Plot specs are plain data in collsim's units
// (model.Bytes, model.GBps, model.Time; a built model.Cluster for the
// topology); reports turns them into gonum plots (the topology into SVG it
// lays out itself) and carries the numbers behind every plot as a table
// next to it. Within one document each series meaning keeps one colour.
//
// [WriteHTML] writes one self-contained file (inline CSS, plots as inline SVG,
// no scripts, fonts, stylesheets or images fetched from anywhere).
// [WriteMarkdown] writes Markdown and the plots as SVG files beside it.
// [WriteFile] picks the format from the file extension and writes atomically
// (temp file in the same directory, fsync, rename), so an existing report is
// only replaced by a complete new one.
//
// Rendering is deterministic: the same Document renders to byte-identical
// output. Nothing here reads the clock; the caller supplies Document.Date.
//
// reports imports model (for units) and gonum/plot only. Commands in
// internal/cli convert the results of sim, calibrate, scenarios and hwbench
// into these types, so nothing in collsim imports reports except internal/cli.
package reports
