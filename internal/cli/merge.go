package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/collsim/collsim/study"
	"github.com/urfave/cli/v2"
)

// maxPartBytes bounds one slice file (a 2^20-design grid in one slice is
// about 2 GB of JSON; slices are meant to be smaller).
const maxPartBytes = 1 << 31

func mergeCommand(e *env) *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "join the slices of a sweep (collsim sweep --shard I/N) into exactly the output of one run",
		ArgsUsage: "PART.json...",
		UsageText: "collsim merge PART1.json PART2.json ... [--format table|json|csv]",
		Flags:     []cli.Flag{formatFlag()},
		Action: func(c *cli.Context) error {
			if c.Args().Len() == 0 {
				return badInputf("merge: give the slice files of one sweep (collsim sweep GRID.yaml --shard I/N > partI.json)")
			}
			format, err := outputFormat(c)
			if err != nil {
				return err
			}
			var parts []*study.SweepResult
			var fps []string
			var hdr sweepHeader
			first := ""
			for i, path := range c.Args().Slice() {
				p, err := readPart(path)
				if err != nil {
					return badInput(err)
				}
				if i == 0 {
					hdr, first = p.Header, path
				} else if p.Header.Fingerprint == hdr.Fingerprint && !reflect.DeepEqual(p.Header, hdr) {
					// The same sweep can only state the same header: one
					// edited would print as if the run had said it.
					return badInputf("merge: %s: its header differs from %s's (%s), though both are slices of one sweep: a slice was edited; write it again with collsim sweep --shard", path, first, headerDiff(hdr, p.Header))
				}
				parts = append(parts, &study.SweepResult{Designs: p.Designs, Total: p.Header.Total, Shard: p.Shard, Shards: p.Shards, Partial: true})
				fps = append(fps, p.Header.Fingerprint)
			}
			base := &study.SweepResult{Within: hdr.Within, Total: hdr.Total, Unit: hdr.Unit}
			merged, err := study.MergeSweep(base, parts, fps)
			if err != nil {
				var ie *study.InputError
				if errors.As(err, &ie) {
					return badInput(err)
				}
				return err
			}
			res := &sweepResult{SweepResult: merged, hdr: hdr}
			res.recommend()
			return printResult(e, res, format, "merge", "", nil)
		},
	}
}

// readPart reads one slice file, naming it in errors.
func readPart(path string) (*sweepPart, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("merge: %w", err)
	}
	defer f.Close()
	dec := json.NewDecoder(io.LimitReader(f, maxPartBytes))
	dec.DisallowUnknownFields()
	var p sweepPart
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("merge: %s: not a sweep slice (%v); write one with collsim sweep GRID.yaml --shard I/N", path, err)
	}
	switch {
	case p.Format != sweepPartFormat:
		return nil, fmt.Errorf("merge: %s: format %q is not %q", path, p.Format, sweepPartFormat)
	case p.Shards < 1 || p.Shard < 1 || p.Shard > p.Shards || p.Header.Total < p.Shards:
		return nil, fmt.Errorf("merge: %s: slice %d/%d of %d designs is not a valid slice", path, p.Shard, p.Shards, p.Header.Total)
	}
	lo, hi := study.ShardRange(p.Header.Total, p.Shard, p.Shards)
	if len(p.Designs) != hi-lo {
		return nil, fmt.Errorf("merge: %s: slice %d/%d of %d designs holds %d designs, want %d (#%d to #%d)", path, p.Shard, p.Shards, p.Header.Total, len(p.Designs), hi-lo, lo+1, hi)
	}
	for i, d := range p.Designs {
		if d == nil {
			return nil, fmt.Errorf("merge: %s: design %d is empty", path, i+1)
		}
		if d.Index != lo+1+i {
			return nil, fmt.Errorf("merge: %s: design %d of slice %d/%d is #%d, want #%d: the slice was edited; write it again with collsim sweep --shard", path, i+1, p.Shard, p.Shards, d.Index, lo+1+i)
		}
	}
	return &p, nil
}

// headerDiff names the fields in which two slice headers differ.
func headerDiff(a, b sweepHeader) string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := 0; i < va.NumField(); i++ {
		if !reflect.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			name := va.Type().Field(i).Tag.Get("json")
			if j := strings.IndexByte(name, ','); j >= 0 {
				name = name[:j]
			}
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}
