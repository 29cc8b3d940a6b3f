package cli

import (
	"errors"
	"strings"

	"github.com/collsim/collsim/calibrate/accuracy"
	"github.com/collsim/collsim/sim"
	"github.com/urfave/cli/v2"
)

func accuracyCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "accuracy",
		Usage:     "score the model, uncalibrated and calibrated, on a corpus of published measurements",
		UsageText: "collsim accuracy --cases FILE [--format table|json] [--engine analytic|des] [--only ID,...]",
		Description: "FILE is a cases.yaml in the shared/data format (raw files relative to it). For each case it prints the\n" +
			"median and 90th percentile |model/measured busbw - 1| in the latency (< 64 KiB), mid (64 KiB - 64 MiB) and\n" +
			"bandwidth (>= 64 MiB) regimes, uncalibrated and calibrated. Calibrated predictions are fitted on the other\n" +
			"cases of the same hardware class, or on the case's other sizes, never on the points scored.\n" +
			"Degraded cases are predicted with their misconfiguration in the cluster flags and validated against the healthy\n" +
			"cluster, whose diagnosis must name the cause. Every other case is put through validate's gate against its own\n" +
			"cluster (each size >= 64 MiB, or >= 8 MiB for runs that stop earlier, within 10%): a failure is a false alarm.\n" +
			"Exit status 1 when a target is missed or a cause is not named.",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "cases", Usage: "cases `FILE` (shared/data/cases.yaml format)"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "output format: table or json"},
			&cli.StringFlag{Name: "engine", Value: "analytic", Usage: "engine for the scored predictions: analytic or des (fits always use analytic)"},
			&cli.StringFlag{Name: "only", Usage: "run only cases whose ID starts with one of these comma-separated `PREFIXES`"},
			reportFlag(),
		},
		Action: func(c *cli.Context) error {
			file := c.String("cases")
			if file == "" && c.Args().Len() == 1 {
				file = c.Args().First()
			} else if c.Args().Len() > 0 {
				return badInputf("accuracy: unexpected argument %q (give the cases file with --cases FILE)", c.Args().First())
			}
			if file == "" {
				return badInputf("accuracy: give the cases file with --cases FILE")
			}
			format := c.String("format")
			if format != "table" && format != "json" {
				return badInputf("accuracy: --format %q: want table or json", format)
			}
			engine, err := sim.ParseEngine(c.String("engine"))
			if err != nil {
				return badInputf("accuracy: --engine: %w", err)
			}
			rpath, err := reportPath(c, "accuracy")
			if err != nil {
				return err
			}
			var only []string
			for _, p := range strings.Split(c.String("only"), ",") {
				if p = strings.TrimSpace(p); p != "" {
					only = append(only, p)
				}
			}
			rep, err := accuracy.Run(c.Context, file, accuracy.Options{Engine: engine, Only: only})
			if err != nil {
				return badInput(err)
			}
			if format == "json" {
				err = writeJSONDoc(e.stdout, rep)
			} else {
				err = rep.WriteText(e.stdout)
			}
			if err != nil {
				return err
			}
			if rpath != "" {
				doc, err := accuracyReport(e, rep, only)
				if err == nil {
					err = writeReport("accuracy", rpath, doc)
				}
				if err != nil {
					return err
				}
			}
			if !rep.Passed() {
				return failed(errors.New("accuracy: a target is not met or a degraded case's cause is not named"))
			}
			return nil
		},
	}
}
