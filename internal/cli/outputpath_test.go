package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOutputPathsCheckedFirst: every command's output option refuses a
// path it could not write (a directory, a missing directory, a file used as
// a directory, a directory without write permission) before doing any work:
// exit 2, one line on stderr naming the option, nothing on stdout and
// nothing created.
func TestOutputPathsCheckedFirst(t *testing.T) {
	measured := snellius2x4[1]
	commands := []struct {
		name string
		args []string // the output path is appended after the flag
		flag string
	}{
		{"predict", []string{"predict", "-b", "8", "-e", "8G"}, "--report"},
		{"calibrate-o", []string{"calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", measured}, "-o"},
		{"calibrate-report", []string{"calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", measured}, "--report"},
		{"validate", []string{"validate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", measured}, "--report"},
		{"inspect", []string{"inspect", measured}, "--report"},
		{"accuracy", []string{"accuracy", "--cases", "../../ingest/testdata/cases.yaml"}, "--report"},
		{"compare", []string{"compare", "--design", "a=--node dgx-h100", "--design", "b=--node dgx-a100"}, "--report"},
		{"scale", []string{"scale", "--node", "dgx-a100"}, "--report"},
		{"sweep", []string{"sweep", "testdata/sweep/train.yaml"}, "--report"},
		{"hwbench-out", []string{"hwbench", "--fake", "--quiet"}, "--out"},
		{"hwbench-report", []string{"hwbench", "--fake", "--quiet"}, "--report"},
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	isDir := filepath.Join(dir, "out.html")
	if err := os.Mkdir(isDir, 0o755); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	// As root a mode-0555 directory still takes files: that case then
	// cannot be shown here.
	roWritable := false
	if f, err := os.CreateTemp(ro, "probe"); err == nil {
		roWritable = true
		f.Close()
		os.Remove(f.Name())
	}
	paths := []struct {
		name, path, want string
	}{
		{"directory", isDir, "is a directory"},
		{"missing-dir", filepath.Join(dir, "nodir", "out.html"), "does not exist"},
		{"file-as-dir", filepath.Join(file, "out.html"), "is not a directory"},
		{"read-only-dir", filepath.Join(ro, "out.html"), "cannot write in directory"},
	}
	before := listNames(t, dir)
	for _, cmd := range commands {
		for _, p := range paths {
			t.Run(cmd.name+"/"+p.name, func(t *testing.T) {
				if p.name == "read-only-dir" && roWritable {
					t.Skip("running with permission to write a mode-0555 directory (root)")
				}
				path := p.path
				if cmd.flag != "--report" {
					path = strings.TrimSuffix(path, ".html") + ".json"
					if p.name == "directory" {
						path = isDir
					}
				}
				code, out, errs := runCLI(t, append(cmd.args, cmd.flag, path)...)
				if code != ExitBadInput {
					t.Fatalf("exit %d, want 2; stderr %q", code, errs)
				}
				if out != "" {
					t.Errorf("work was done before the output path was checked: stdout %q", firstLine(out))
				}
				line := strings.TrimSpace(errs)
				if strings.Contains(line, "\n") || !strings.Contains(line, cmd.flag+" "+path) || !strings.Contains(line, p.want) {
					t.Errorf("stderr %q: want one line naming %s %s and %q", errs, cmd.flag, path, p.want)
				}
				if got := listNames(t, dir); !slices.Equal(got, before) {
					t.Errorf("files %q after the refusal, want %q", got, before)
				}
			})
		}
	}
}

func listNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		names = append(names, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// TestOutputsNameDistinctFiles: two output options of one command that
// name the same file (the second written would replace the first while the
// command says it wrote both) are refused before any work: exit 2, one line
// naming both options, nothing on stdout and no file created. Paths that
// differ only in spelling (./a/../a/x) are the same file.
func TestOutputsNameDistinctFiles(t *testing.T) {
	measured := snellius2x4[1]
	dir := t.TempDir()
	same := filepath.Join(dir, "out.md")
	alias := filepath.Join(dir, "sub", "..", "out.md")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		args  []string
		flags string // both options, in the message
	}{
		{"predict", []string{"predict", "--node", "dgx-h100", "--nodes", "1", "-b", "1M", "-e", "1M", "--trace", same, "--report", alias}, "--report and --trace"},
		{"calibrate", []string{"calibrate", "--node", "hgx-h100-4gpu", "--nodes", "2", "--measured", measured, "-o", same, "--report", same}, "-o and --report"},
		{"hwbench", []string{"hwbench", "--fake", "--quiet", "-e", "1M", "--out", same, "--nccl-text", alias}, "--out and --nccl-text"},
		{"hwbench-report", []string{"hwbench", "--fake", "--quiet", "-e", "1M", "--out", filepath.Join(dir, "h.json"), "--report", same, "--nccl-text", same}, "--nccl-text and --report"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := listNames(t, dir)
			code, out, errs := runCLI(t, tc.args...)
			if code != ExitBadInput || out != "" || !strings.Contains(errs, tc.flags) || strings.Count(strings.TrimSpace(errs), "\n") > 0 {
				t.Fatalf("exit %d, stdout %q, stderr %q; want exit 2, one line naming %s", code, out, errs, tc.flags)
			}
			if after := listNames(t, dir); !slices.Equal(before, after) {
				t.Errorf("files %v after the refusal, %v before", after, before)
			}
		})
	}
}
