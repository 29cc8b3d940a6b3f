package cli

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// sortedKeys returns a map's keys in order (deterministic output).
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// checkOutput checks, before a command does any work, that path can be
// written as a file: it is not a directory or a device, and its directory
// exists and takes new files (tried with a temporary file that is removed
// at once). cmd and flag name the option in the error ("calibrate", "-o");
// an empty path is no output and passes. Every command's output option
// (--report, -o, --out) goes through it, so a run that could not save its
// result fails at once with exit 2 instead of after the work.
func checkOutput(cmd, flag, path string) error {
	if path == "" {
		return nil
	}
	bad := func(format string, a ...any) error {
		return badInputf("%s: %s %s: %s", cmd, flag, path, fmt.Sprintf(format, a...))
	}
	if st, err := os.Stat(path); err == nil {
		switch {
		case st.IsDir():
			return bad("is a directory; give a file name")
		case !st.Mode().IsRegular():
			return bad("is not a regular file")
		}
	} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
		return bad("%v", pathCause(err))
	}
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return bad("directory %s does not exist", dir)
	case err != nil:
		return bad("directory %s: %v", dir, pathCause(err))
	case !st.IsDir():
		return bad("%s is not a directory", dir)
	}
	f, err := os.CreateTemp(dir, ".collsim-check-*")
	if err != nil {
		return bad("cannot write in directory %s: %v", dir, pathCause(err))
	}
	name := f.Name()
	return errors.Join(f.Close(), os.Remove(name))
}

// distinctOutputs refuses, before any work, two output options that name
// one file: the second written would replace the first, and the command
// would say it wrote both. outs are pairs of an option and its path; empty
// paths are no output. Paths are compared cleaned and absolute, and as
// files where both exist (links, bind mounts).
func distinctOutputs(cmd string, outs ...[2]string) error {
	for i, a := range outs {
		for _, b := range outs[i+1:] {
			if a[1] == "" || b[1] == "" || a[1] == "-" || b[1] == "-" {
				continue
			}
			if samePath(a[1], b[1]) {
				return badInputf("%s: %s and %s both name %s: the second would overwrite the first; give each its own file", cmd, a[0], b[0], b[1])
			}
		}
	}
	return nil
}

// writtenFlags are the options that name files a command writes; every
// other option whose usage takes a `FILE` names one it reads.
var writtenFlags = map[string]bool{"report": true, "output": true, "out": true, "nccl-text": true, "trace": true}

// notAnInput refuses, before any work, an output path that names one of
// the command's input files (an option taking a FILE, or a file given
// after the options): writing the output would replace the measurement,
// cluster or workload it was computed from.
func notAnInput(c *cli.Context, cmd, flag, out string) error {
	if out == "" || out == "-" {
		return nil
	}
	for _, in := range inputFiles(c) {
		if samePath(out, in[1]) {
			return badInputf("%s: %s %s is also an input (%s): writing it would replace that file; give the output another name", cmd, flag, out, in[0])
		}
	}
	return nil
}

// inputFiles lists the files a command reads: the values of its options
// that take a FILE (other than writtenFlags) and the arguments after the
// options, each with the option that gave it.
func inputFiles(c *cli.Context) [][2]string {
	var out [][2]string
	if c.Command != nil {
		for _, f := range c.Command.Flags {
			names := f.Names()
			if len(names) == 0 || writtenFlags[names[0]] || !c.IsSet(names[0]) {
				continue
			}
			df, ok := f.(cli.DocGenerationFlag)
			if !ok || !strings.Contains(df.GetUsage(), "`FILE") {
				continue
			}
			var vals []string
			switch v := c.Value(names[0]).(type) {
			case string:
				vals = []string{v}
			case []string:
				vals = v
			case cli.StringSlice:
				vals = v.Value()
			case *listValue:
				vals = v.vals
			}
			for _, p := range vals {
				if p != "" && p != "-" {
					out = append(out, [2]string{"--" + names[0], p})
				}
			}
		}
	}
	for _, a := range c.Args().Slice() {
		out = append(out, [2]string{"argument", a})
	}
	return out
}

// samePath reports whether two paths name one file: equal once absolute
// and cleaned (filepath.Abs cleans), or the same file where both exist
// (links, bind mounts).
func samePath(a, b string) bool {
	x, errA := filepath.Abs(a)
	y, errB := filepath.Abs(b)
	if errA == nil && errB == nil && x == y {
		return true
	}
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(sa, sb)
}

// pathCause is the reason of a file-system error without the path the
// caller already names ("permission denied", not "open x: permission
// denied").
func pathCause(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// count is n with its noun, singular for 1 ("1 node", "16 nodes").
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
